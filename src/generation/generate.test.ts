import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { positionsFromMask } from '../model/decoder.ts';
import { tokenLogprobs } from '../model/logprobs.ts';
import { tidyObject } from '../model/tidy.ts';
import { Rng } from '../random/rng.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { decodeBatches, generate, prefillChunks, type GenerateOptions, type GenerateRequest } from './generate.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TINY = resolve(repoRoot, '../shared/models/tinystories-260k');
const HAVE_TINY = existsSync(TINY);
const ONCE = [1, 403, 407, 261, 378]; // "<s> Once upon a time"

/** Decodes ids as space-joined numbers: lets random-vocabulary models run without a tokenizer file. */
const NUMERIC = { decode: (ids: readonly number[]): string => ids.map((i) => ` ${i}`).join('') };

let tiny: CausalLM | undefined;
let tok: Tokenizer | undefined;
let rnd: CausalLM;

beforeAll(async () => {
  await initBackend('wasm');
  if (HAVE_TINY) {
    tiny = await CausalLM.load(TINY);
    tok = await Tokenizer.load(TINY);
  }
  rnd = CausalLM.random(
    hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 300 }),
    11,
  );
});
afterAll(() => {
  tiny?.dispose();
  rnd.dispose();
});

function opts(over: Partial<GenerateOptions> = {}): GenerateOptions {
  return { temperature: 0, topK: 0, topP: 1, rng: new Rng(0), eosIds: [], decoder: NUMERIC, ...over };
}

/** Logprobs recomputed by the training path for prompt ++ generated, per request. */
function trainingLogprobs(model: CausalLM, reqs: GenerateRequest[], gen: number[][]): number[][] {
  const rows = reqs.map((r, i) => [...r.promptIds, ...(gen[i] as number[])]);
  const t = Math.max(...rows.map((r) => r.length));
  const ids = rows.flatMap((r) => [...r, ...new Array<number>(t - r.length).fill(0)]); // right padding
  const mask = rows.flatMap((r) => [
    ...new Array<number>(r.length).fill(1),
    ...new Array<number>(t - r.length).fill(0),
  ]);
  const lp = tf.tidy(() =>
    tokenLogprobs(
      model,
      tf.tensor2d(ids, [rows.length, t], 'int32'),
      tf.tensor2d(mask, [rows.length, t], 'int32'),
    ).arraySync(),
  );
  return reqs.map((r, i) =>
    (lp[i] as number[]).slice(r.promptIds.length - 1, r.promptIds.length - 1 + (gen[i] as number[]).length),
  );
}

describe.skipIf(!HAVE_TINY)('tinystories-260k parity', () => {
  it('greedy 64 tokens from "Once upon a time" continue ", there was a little girl named Lily."', async () => {
    const [r] = await generate(
      tiny as CausalLM,
      [{ promptIds: ONCE, maxNewTokens: 64 }],
      opts({ eosIds: (tok as Tokenizer).eosIds, decoder: tok }),
    );
    expect(r?.text.startsWith(', there was a little girl named Lily.')).toBe(true);
    expect(r?.tokenIds.length).toBe(64);
    expect(r?.finishReason).toBe('length');
    expect(r?.text.split(' ').length).toBeGreaterThan(30); // fluent: words, not fragments
  });

  it('logits with and without the KV cache agree to 1e-4 (prefill 5, then 6 single steps)', () => {
    const m = tiny as CausalLM;
    const seq = [...ONCE, 432, 383, 286, 261, 376, 298];
    // [T, V]
    const full = tf.tidy(() => m.forward(tf.tensor2d(seq, [1, seq.length], 'int32')).arraySync()[0] as number[][]);
    const pre = tidyObject(() => {
      const mask = tf.ones([1, 5], 'float32') as tf.Tensor2D;
      return {
        ...m.forwardCached(tf.tensor2d(ONCE, [1, 5], 'int32'), positionsFromMask(mask), mask, undefined, true),
        mask,
      };
    });
    let kv = pre.kv;
    let maxDiff = 0;
    const cmp = (logits: tf.Tensor2D, t: number): void => {
      const got = logits.dataSync();
      (full[t] as number[]).forEach((v, j) => (maxDiff = Math.max(maxDiff, Math.abs(v - (got[j] as number)))));
    };
    cmp(pre.logits, 4);
    for (let t = 5; t < seq.length; t++) {
      const step = tidyObject(() =>
        m.forwardCached(
          tf.tensor2d([seq[t] as number], [1, 1], 'int32'),
          tf.tensor2d([t], [1, 1]),
          tf.ones([1, t + 1]) as tf.Tensor2D,
          kv,
          true,
        ),
      );
      tf.dispose(kv.flatMap((l) => [l.k, l.v]));
      kv = step.kv;
      cmp(step.logits, t);
      step.logits.dispose();
    }
    tf.dispose([pre.logits, pre.mask, ...kv.flatMap((l) => [l.k, l.v])]);
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it('tokenLogprobs equals the logprobs generation returns, to 1e-4 (batch of 3, sampled, left-padded prompts)', async () => {
    const reqs: GenerateRequest[] = [
      { promptIds: ONCE, maxNewTokens: 20 },
      { promptIds: [1, 403], maxNewTokens: 12 },
      { promptIds: [1, 403, 407, 261, 378, 432, 383, 286], maxNewTokens: 16 },
    ];
    const out = await generate(
      tiny as CausalLM,
      reqs,
      opts({ temperature: 1, topP: 0.95, rng: new Rng(5), eosIds: (tok as Tokenizer).eosIds, decoder: tok }),
    );
    const ref = trainingLogprobs(
      tiny as CausalLM,
      reqs,
      out.map((o) => o.tokenIds),
    );
    out.forEach((o, i) => {
      expect(o.logprobs.length).toBe(o.tokenIds.length);
      o.logprobs.forEach((lp, j) => expect(Math.abs(lp - (ref[i]?.[j] as number))).toBeLessThan(1e-4));
    });
  });

  it('stop strings end a sequence and stay in its text', async () => {
    const [r] = await generate(
      tiny as CausalLM,
      [{ promptIds: ONCE, maxNewTokens: 64, stop: ['Lily'] }],
      opts({ decoder: tok }),
    );
    expect(r?.finishReason).toBe('stop');
    expect(r?.text).toBe(', there was a little girl named Lily');
  });
});

describe('generate on a random qwen3 model', () => {
  it('the same seed replays; forced tokens reproduce ids and logprobs', async () => {
    const reqs: GenerateRequest[] = [
      { promptIds: [5, 6, 7], maxNewTokens: 12 },
      { promptIds: [9], maxNewTokens: 8 },
    ];
    const a = await generate(rnd, reqs, opts({ temperature: 1, rng: new Rng(3) }));
    const b = await generate(rnd, reqs, opts({ temperature: 1, rng: new Rng(3) }));
    const c = await generate(rnd, reqs, opts({ temperature: 1, rng: new Rng(4) }));
    expect(b.map((r) => r.tokenIds)).toEqual(a.map((r) => r.tokenIds));
    expect(c.map((r) => r.tokenIds)).not.toEqual(a.map((r) => r.tokenIds));
    const replay = await generate(
      rnd,
      reqs.map((r, i) => ({ ...r, forcedTokens: a[i]?.tokenIds })),
      opts({ temperature: 1, rng: new Rng(99) }),
    );
    replay.forEach((r, i) => {
      expect(r.tokenIds).toEqual(a[i]?.tokenIds);
      r.logprobs.forEach((lp, j) => expect(Math.abs(lp - (a[i]?.logprobs[j] as number))).toBeLessThan(1e-5));
    });
    // A random 300-token model near uniform: sampled logprobs are around -ln 300 = -5.7.
    expect(Math.max(...(a[0]?.logprobs ?? []))).toBeLessThan(-3);
  });

  it('per-sequence budgets and EOS: finished rows drop out, EOS stays in tokenIds, not in text', async () => {
    // Sampled (a random model's greedy path repeats one token); the same seed gives the same prefix.
    const sampled = await generate(
      rnd,
      [{ promptIds: [1, 2, 3], maxNewTokens: 6 }],
      opts({ temperature: 1, rng: new Rng(8) }),
    );
    const third = sampled[0]?.tokenIds[2] as number;
    const firstTwo = sampled[0]?.tokenIds.slice(0, 2) ?? [];
    expect(firstTwo).not.toContain(third); // else the EOS case below would be ambiguous
    const out = await generate(
      rnd,
      [
        { promptIds: [1, 2, 3], maxNewTokens: 6 },
        { promptIds: [4, 5], maxNewTokens: 3 },
        { promptIds: [6], maxNewTokens: 0 },
      ],
      opts({ eosIds: [third], temperature: 1, rng: new Rng(8) }),
    );
    // Each request samples from its own forked stream, so row 0 draws the same numbers in both runs.
    expect(out[0]?.tokenIds).toEqual(sampled[0]?.tokenIds.slice(0, 3));
    expect(out[0]?.finishReason).toBe('eos');
    expect(out[0]?.text).toBe(NUMERIC.decode(firstTwo));
    expect(out[1]?.tokenIds.length).toBe(3);
    expect(out[1]?.finishReason === 'length' || out[1]?.finishReason === 'eos').toBe(true);
    expect(out[2]).toEqual({ tokenIds: [], logprobs: [], text: '', finishReason: 'length' });
  });

  it('500 decode steps leave the tensor count where it was', async () => {
    await generate(rnd, [{ promptIds: [1], maxNewTokens: 4 }], opts()); // warm-up
    const before = tf.memory().numTensors;
    const out = await generate(
      rnd,
      [
        { promptIds: [1, 2, 3], maxNewTokens: 500 },
        { promptIds: [4], maxNewTokens: 250 },
      ],
      opts({ temperature: 1, rng: new Rng(1) }),
    );
    expect(out[0]?.tokenIds.length).toBe(500);
    expect(out[1]?.tokenIds.length).toBe(250);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('bad requests are one-line errors', async () => {
    await expect(generate(rnd, [{ promptIds: [], maxNewTokens: 3 }], opts())).rejects.toThrow(
      'request 0 has an empty prompt',
    );
    await expect(generate(rnd, [{ promptIds: [1, 300], maxNewTokens: 3 }], opts())).rejects.toThrow(
      'token id 300 outside the vocabulary [0, 300)',
    );
  });
});

describe('prefill memory budget', () => {
  it('prefillChunks cuts consecutive rows where rows x heads x T^2 would pass the budget', () => {
    // heads 2, budget 200 floats: T=5 -> 50 per row; T=10 -> 200 per row.
    expect(prefillChunks([5, 5, 5, 5, 5], 2, 200)).toEqual([[0, 1, 2, 3], [4]]);
    expect(prefillChunks([5, 10, 5], 2, 200)).toEqual([[0], [1], [2]]);
    expect(prefillChunks([3, 4], 2, 1)).toEqual([[0], [1]]); // a row alone may exceed it
    expect(prefillChunks([], 2, 200)).toEqual([]);
  });

  it('a call split into batches by the budget samples the same tokens as one batch', async () => {
    const reqs: GenerateRequest[] = [
      { promptIds: [5, 6, 7, 8, 9, 10], maxNewTokens: 9 },
      { promptIds: [11, 12], maxNewTokens: 7 },
      { promptIds: [13, 14, 15, 16], maxNewTokens: 0 },
      { promptIds: [17, 18, 19, 20, 21, 22, 23, 24], maxNewTokens: 11 },
    ];
    const whole = await generate(rnd, reqs, opts({ temperature: 1, rng: new Rng(3) }));
    const split = await generate(rnd, reqs, opts({ temperature: 1, rng: new Rng(3), prefillScoreBudget: 1 }));
    expect(split.map((o) => o.tokenIds)).toEqual(whole.map((o) => o.tokenIds));
    expect(split.map((o) => o.tokenIds.length)).toEqual([9, 7, 0, 11]);
    split.forEach((o, i) =>
      o.logprobs.forEach((lp, j) => expect(Math.abs(lp - (whole[i]?.logprobs[j] as number))).toBeLessThan(1e-4)),
    );
    // the chunks decoded one after another (a decode budget of 1 byte) sample the same too
    const apart = await generate(
      rnd,
      reqs,
      opts({ temperature: 1, rng: new Rng(3), prefillScoreBudget: 1, decodeKvBytes: 1 }),
    );
    expect(apart.map((o) => o.tokenIds)).toEqual(whole.map((o) => o.tokenIds));
  });

  it('decodeBatches groups consecutive prefill chunks up to the bytes of keys and values', () => {
    const bytes = (k: number): number => [10, 20, 30, 40, 50][k] as number;
    // 30 + 30, then 90 alone
    expect(decodeBatches([[0, 1], [2], [3, 4]], bytes, 60)).toEqual([[[0, 1], [2]], [[3, 4]]]);
    expect(decodeBatches([[0], [1], [2]], bytes, 1e9)).toEqual([[[0], [1], [2]]]);
    expect(decodeBatches([[0], [1]], bytes, 1)).toEqual([[[0]], [[1]]]); // a chunk alone may exceed it
    expect(decodeBatches([], bytes, 60)).toEqual([]);
  });
});
