import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { Rng } from '../random/rng.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { generate, type GenerateOptions, type GenerateRequest, type GenerateResult } from './generate.ts';
import { emptyPrefillStats, prefillPrompts, type PrefillStats } from './prefill.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TINY = resolve(repoRoot, '../shared/models/tinystories-260k');
const HAVE_TINY = existsSync(TINY);
const NUMERIC = { decode: (ids: readonly number[]): string => ids.map((i) => ` ${i}`).join('') };

let rnd: CausalLM;
let tiny: CausalLM | undefined;
let tok: Tokenizer | undefined;

beforeAll(async () => {
  await initBackend('wasm');
  // GQA (4 query heads on 2 kv heads) so the gather of kv rows is exercised with KV > 1.
  rnd = CausalLM.random(
    hfConfigFor({ arch: 'llama', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 300 }),
    21,
  );
  if (HAVE_TINY) {
    tiny = await CausalLM.load(TINY);
    tok = await Tokenizer.load(TINY);
  }
});
afterAll(() => {
  rnd.dispose();
  tiny?.dispose();
});

const seq = (rng: Rng, n: number, vocab: number): number[] => Array.from({ length: n }, () => rng.int(1, vocab - 1));

/**
 * Mixed batch: group A (40-token context, suffixes of 1, 5 and 12 tokens), group B (24-token
 * context, suffixes 3 and 7), and two loners (10 and 50 tokens), interleaved in request order.
 */
function mixedPrompts(vocab: number): number[][] {
  const rng = new Rng(7);
  const a = seq(rng, 40, vocab);
  const b = seq(rng, 24, vocab);
  return [
    [...a, ...seq(rng, 1, vocab)],
    [...b, ...seq(rng, 3, vocab)],
    seq(rng, 10, vocab),
    [...a, ...seq(rng, 5, vocab)],
    [...b, ...seq(rng, 7, vocab)],
    seq(rng, 50, vocab),
    [...a, ...seq(rng, 12, vocab)],
  ];
}
// Hand count: all prompt tokens = 41 + 27 + 10 + 45 + 31 + 50 + 52 = 256. Shared: A (40) once
// instead of 3 times, B (24) once instead of twice: 256 - 2*40 - 24 = 152 tokens prefilled, 104 reused.
const MIXED_TOKENS = 256;
const MIXED_SHARED_TOKENS = 152;

function opts(over: Partial<GenerateOptions>): GenerateOptions {
  return { temperature: 0, topK: 0, topP: 1, rng: new Rng(0), eosIds: [], decoder: NUMERIC, ...over };
}

function expectSame(on: GenerateResult[], off: GenerateResult[]): void {
  expect(on.map((r) => r.tokenIds)).toEqual(off.map((r) => r.tokenIds));
  on.forEach((r, i) =>
    r.logprobs.forEach((lp, j) => expect(Math.abs(lp - (off[i]?.logprobs[j] as number))).toBeLessThan(1e-4)),
  );
}

async function both(
  model: CausalLM,
  reqs: GenerateRequest[],
  over: Partial<GenerateOptions>,
  seed: number,
): Promise<{ on: GenerateResult[]; off: GenerateResult[]; sOn: PrefillStats; sOff: PrefillStats }> {
  const sOn = emptyPrefillStats();
  const sOff = emptyPrefillStats();
  const on = await generate(model, reqs, opts({ ...over, rng: new Rng(seed), prefixMinTokens: 16, stats: sOn }));
  const off = await generate(model, reqs, opts({ ...over, rng: new Rng(seed), prefixMinTokens: 0, stats: sOff }));
  return { on, off, sOn, sOff };
}

describe('shared-prefix prefill on a random llama', () => {
  it('first-step logits equal the plain prefill to 1e-4, and the counter shows each prefix ran once', () => {
    const prompts = mixedPrompts(300);
    const headT = rnd.inferenceHead(); // [D, V]
    const sOn = emptyPrefillStats();
    const sOff = emptyPrefillStats();
    const on = prefillPrompts(rnd, prompts, { padId: 0, headT, minTokens: 16, stats: sOn });
    const off = prefillPrompts(rnd, prompts, { padId: 0, headT, minTokens: 0, stats: sOff });
    const a = on.logits.dataSync();
    const b = off.logits.dataSync();
    expect(a.length).toBe(7 * 300);
    let maxDiff = 0;
    a.forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - (b[i] as number)))));
    expect(maxDiff).toBeLessThan(1e-4);
    // The shared cache holds Tpre (40) + Tsuf (50, the long loner) columns; the plain one 52.
    expect(on.cache.keyMask.shape).toEqual([7, 90]);
    expect(off.cache.keyMask.shape).toEqual([7, 52]);
    expect(sOn).toEqual({
      prefillTokens: MIXED_SHARED_TOKENS,
      prefillColumns: 2 * 40 + 7 * 50,
      sharedPrefixes: 2,
      reusedTokens: 104,
    });
    expect(sOff).toEqual({ prefillTokens: MIXED_TOKENS, prefillColumns: 7 * 52, sharedPrefixes: 0, reusedTokens: 0 });
    tf.dispose([on.logits, off.logits]);
    headT.dispose();
    on.cache.dispose();
    off.cache.dispose();
  });

  it('greedy: same token ids and logprobs with reuse on and off (mixed groups and loners)', async () => {
    const reqs = mixedPrompts(300).map((p, i) => ({ promptIds: p, maxNewTokens: 6 + i }));
    const { on, off, sOn, sOff } = await both(rnd, reqs, {}, 0);
    expectSame(on, off);
    expect(on[6]?.tokenIds.length).toBe(12);
    expect(sOn.prefillTokens).toBe(MIXED_SHARED_TOKENS);
    expect(sOff.prefillTokens).toBe(MIXED_TOKENS);
  });

  it('seeded sampling (top-p) and forced tokens: same ids and logprobs with reuse on and off', async () => {
    const reqs = mixedPrompts(300).map((p) => ({ promptIds: p, maxNewTokens: 10 }));
    const { on, off } = await both(rnd, reqs, { temperature: 1, topP: 0.9 }, 5);
    expectSame(on, off);
    // Replay of the recorded tokens through shared prefixes reproduces the logprobs.
    const forced = await generate(
      rnd,
      reqs.map((r, i) => ({ ...r, forcedTokens: on[i]?.tokenIds })),
      opts({ temperature: 1, rng: new Rng(99), prefixMinTokens: 16 }),
    );
    expectSame(forced, on);
  });

  it('leaves the tensor count where it was', async () => {
    const reqs = mixedPrompts(300).map((p) => ({ promptIds: p, maxNewTokens: 4 }));
    await generate(rnd, reqs, opts({ prefixMinTokens: 16 })); // warm-up
    const before = tf.memory().numTensors;
    await generate(rnd, reqs, opts({ temperature: 1, rng: new Rng(2), prefixMinTokens: 16 }));
    expect(tf.memory().numTensors).toBe(before);
  });

  it('a bad threshold is a one-line error', async () => {
    await expect(
      generate(
        rnd,
        [
          { promptIds: [1], maxNewTokens: 1 },
          { promptIds: [1], maxNewTokens: 1 },
        ],
        opts({ prefixMinTokens: -2 }),
      ),
    ).rejects.toThrow('prefixMinTokens must be a non-negative integer (got -2)');
  });
});

describe.skipIf(!HAVE_TINY)('shared-prefix prefill on tinystories-260k', () => {
  it('replays of one story context with different tails: same ids and logprobs, prefix prefilled once', async () => {
    const t = tok as Tokenizer;
    const ctx = t.encode(
      'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her ' +
        'friends. One day,',
      { addSpecialTokens: true },
    );
    const tails = [' she saw a big dog.', ' it rained.', ' her mom said', ' a bird', ''];
    const prompts = tails.map((s) => (s === '' ? ctx : [...ctx, ...t.encode(s, { addSpecialTokens: false })]));
    prompts.push(t.encode('Tom had a red ball.', { addSpecialTokens: true })); // loner
    expect(ctx.length).toBeGreaterThan(20);
    const reqs = prompts.map((p) => ({ promptIds: p, maxNewTokens: 24 }));
    for (const [over, seed] of [
      [{}, 0],
      [{ temperature: 1, topP: 0.95 }, 3],
    ] as const) {
      const { on, off, sOn, sOff } = await both(
        tiny as CausalLM,
        reqs,
        { ...over, eosIds: t.eosIds, decoder: t },
        seed,
      );
      expectSame(on, off);
      expect(on.map((r) => r.text)).toEqual(off.map((r) => r.text));
      // One group of the 5 story prompts; its shared length is ctx - 1 (the bare ctx must keep its last token).
      expect(sOn.sharedPrefixes).toBe(1);
      expect(sOn.reusedTokens).toBe(4 * (ctx.length - 1));
      expect(sOff.prefillTokens - sOn.prefillTokens).toBe(4 * (ctx.length - 1));
    }
  });
});
