import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { Rng } from '../random/rng.ts';
import type { PolicyRequest } from './policy.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../tokenizer/fit.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { LmPolicy } from './lm-policy.ts';
import { prefixCacheFor, prefixCacheStats, setPrefixCacheBytes } from '../generation/prefix-cache.ts';
import { renderPromptIds } from '../tokenizer/chat-prompt.ts';

let dir: string;
let tok: Tokenizer;
let model: CausalLM;

beforeAll(async () => {
  await initBackend('wasm');
  dir = await mkdtemp(join(tmpdir(), 'sharp-policy-'));
  const corpus = [
    'Who wrote the book? <search>author of the book</search>',
    'The answer is 42. <answer>42</answer>',
    'Paris is the capital of France.',
  ];
  await writeTokenizerFiles(dir, fitBpeTokenizer(corpus, 320)); // ChatML template, <|im_end|> = EOS
  tok = await Tokenizer.load(dir);
  model = CausalLM.random(
    hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: tok.vocabSize }),
    4,
  );
});
afterAll(async () => {
  model.dispose();
  await rm(dir, { recursive: true, force: true });
});

const request = (content: string, over: Partial<PolicyRequest> = {}): PolicyRequest => ({
  key: content,
  role: 'worker',
  messages: [
    { role: 'system', content: 'You answer.' },
    { role: 'user', content },
  ],
  stop: [],
  maxNewTokens: 10,
  ...over,
});

describe('renderPromptIds', () => {
  it('renders the chat template with the assistant generation prompt', () => {
    const ids = renderPromptIds(tok, request('Who wrote the book?').messages);
    expect(tok.decode(ids)).toBe(
      '<|im_start|>system\nYou answer.<|im_end|>\n<|im_start|>user\nWho wrote the book?<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });
});

describe('LmPolicy', () => {
  it('batches requests; logprobs match tokens; forced replay reproduces them; the context limit is flagged', async () => {
    const policy = new LmPolicy(model, tok, { temperature: 1, topK: 0, topP: 1, maxContext: 64, rng: new Rng(2) });
    const reqs = [request('Who wrote the book?'), request('Paris?', { maxNewTokens: 5 })];
    const out = await policy.generate(reqs);
    expect(out.length).toBe(2);
    out.forEach((r, i) => {
      expect(r.promptTokens).toBe(renderPromptIds(tok, reqs[i]?.messages ?? []).length);
      expect(r.logprobs.length).toBe(r.tokenIds.length);
      expect(r.tokenIds.length).toBeLessThanOrEqual(reqs[i]?.maxNewTokens ?? 0);
      expect(r.contextOverflow).toBe(false);
    });
    const replay = await policy.generate(reqs.map((r, i) => ({ ...r, forcedTokens: out[i]?.tokenIds })));
    replay.forEach((r, i) => {
      expect(r.tokenIds).toEqual(out[i]?.tokenIds);
      expect(r.text).toBe(out[i]?.text);
      r.logprobs.forEach((lp, j) => expect(Math.abs(lp - (out[i]?.logprobs[j] as number))).toBeLessThan(1e-5));
    });
    // Prompt ~30 tokens, maxContext 64 leaves fewer than 60: the turn is cut and flagged.
    const long = await policy.generate([request('Who wrote the book?', { maxNewTokens: 60 })]);
    const room = 64 - (long[0]?.promptTokens ?? 0);
    expect(room).toBeGreaterThan(0);
    expect(long[0]?.finishReason).toBe('length'); // this seed draws no EOS
    expect(long[0]?.tokenIds.length).toBe(room);
    expect(long[0]?.contextOverflow).toBe(true);
  });

  it('rejects bad options with one-line errors', () => {
    expect(
      () => new LmPolicy(model, tok, { temperature: 1, topK: 0, topP: 1, maxContext: 1, rng: new Rng(0) }),
    ).toThrow(/maxContext/);
    expect(
      () => new LmPolicy(model, tok, { temperature: 1, topK: 0, topP: 2, maxContext: 64, rng: new Rng(0) }),
    ).toThrow(/topP/);
  });
});

describe('LmPolicy with the prefix cache', () => {
  it(
    "a second turn reuses the first turn's conversation, answers as without the cache, and a new LmPolicy starts " +
      'empty',
    async () => {
      const long = 'Who wrote the book? The answer is 42. Paris is the capital of France. Who wrote the book?';
      const turn2 = (first: string): PolicyRequest =>
        request(long, {
          messages: [
            ...request(long).messages,
            { role: 'assistant', content: first },
            { role: 'user', content: 'Paris?' },
          ],
          maxNewTokens: 6,
        });
      const run = async (): Promise<{ texts: string[]; logprobs: number[][] }> => {
        const policy = new LmPolicy(model, tok, { temperature: 0, topK: 0, topP: 1, maxContext: 256, rng: new Rng(3) });
        const a = await policy.generate([request(long, { maxNewTokens: 6 })]);
        const b = await policy.generate([turn2(a[0]?.text ?? '')]);
        return { texts: [...a, ...b].map((r) => r.text), logprobs: [...a, ...b].map((r) => r.logprobs) };
      };
      const off = await run();
      setPrefixCacheBytes(2 ** 24);
      try {
        const on = await run();
        expect(on.texts).toEqual(off.texts);
        on.logprobs
          .flat()
          .forEach((lp, i) => expect(Math.abs(lp - (off.logprobs.flat()[i] as number))).toBeLessThan(1e-4));
        const stats = prefixCacheStats();
        // The second turn's prompt starts with the whole first prompt (>= 16 tokens): it was served from the cache.
        expect(stats?.hitTokens).toBeGreaterThanOrEqual(renderPromptIds(tok, request(long).messages).length);
        expect(prefixCacheFor(model)?.size).toBeGreaterThan(0);
        new LmPolicy(model, tok, { temperature: 0, topK: 0, topP: 1, maxContext: 256, rng: new Rng(3) });
        expect(prefixCacheFor(model)?.size).toBe(0);
      } finally {
        setPrefixCacheBytes(0);
      }
    },
  );
});
