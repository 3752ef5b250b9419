import { describe, expect, it } from 'vitest';
import { joinToolResponses } from './tool-responses.ts';

const r = (s: string) => ({ role: 'user', content: `<tool_response>\n${s}\n</tool_response>` });

describe('joinToolResponses', () => {
  it('joins adjacent wrapped results into one user turn, and nothing else', () => {
    const q = { role: 'user', content: 'question' };
    const a = { role: 'assistant', content: 'calls' };
    expect(joinToolResponses([q, a, r('A'), r('B'), a, r('C')])).toEqual([
      q,
      a,
      { role: 'user', content: '<tool_response>\nA\n</tool_response>\n<tool_response>\nB\n</tool_response>' },
      a,
      r('C'),
    ]);
    // a plain user message next to a result is not a result
    expect(joinToolResponses([r('A'), q])).toEqual([r('A'), q]);
  });
});
