import { describe, expect, it } from 'vitest';
import type { ChatEncoder } from '../tokenizer/chat-prompt.ts';
import { renderPromptIds } from '../tokenizer/chat-prompt.ts';
import { cachedPromptIds } from './prompt-cache.ts';

/** An encoder that counts its renderings: ids are the char codes of "role:content|...". */
function countingEncoder(): ChatEncoder & { calls: number } {
  const enc = {
    calls: 0,
    encodeChat(
      messages: readonly { role: string; content: string }[],
      opts: { addGenerationPrompt: boolean },
    ): number[] {
      enc.calls += 1;
      const text = messages.map((m) => `${m.role}:${m.content}`).join('|') + (opts.addGenerationPrompt ? '>' : '');
      return [...text].map((c) => c.charCodeAt(0));
    },
  };
  return enc;
}

describe('cachedPromptIds', () => {
  const conv = [
    { role: 'system', content: 'You answer.' },
    { role: 'user', content: 'Who?' },
  ];

  it('gives the ids renderPromptIds gives, rendering a repeated conversation once', () => {
    const enc = countingEncoder();
    const fresh = renderPromptIds(countingEncoder(), conv);
    expect(cachedPromptIds(enc, conv)).toEqual(fresh);
    expect(
      cachedPromptIds(
        enc,
        conv.map((m) => ({ ...m })),
      ),
    ).toEqual(fresh);
    expect(enc.calls).toBe(1);
  });

  it('returns an array the caller owns: mutating it changes no later result', () => {
    const enc = countingEncoder();
    const a = cachedPromptIds(enc, conv);
    a.push(-1);
    a[0] = -2;
    expect(cachedPromptIds(enc, conv)).toEqual(renderPromptIds(countingEncoder(), conv));
  });

  it('keeps encoders apart and tells conversations apart by every message', () => {
    const e1 = countingEncoder();
    const e2 = countingEncoder();
    cachedPromptIds(e1, conv);
    cachedPromptIds(e2, conv);
    const other = [conv[0] as { role: string; content: string }, { role: 'user', content: 'Who? ' }];
    expect(cachedPromptIds(e1, other)).toEqual(renderPromptIds(countingEncoder(), other));
    expect([e1.calls, e2.calls]).toEqual([2, 1]);
  });
});
