import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { enableNativeKernels } from '../backend/native/index.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { Rng } from '../random/rng.ts';
import { testBackend } from '../../test/backend.ts';
import { generate, type GenerateOptions, type GenerateRequest, type GenerateResult } from './generate.ts';
import { emptyPrefillStats, prefillPrompts, prefillWithCache, suffixBuckets } from './prefill.ts';
import { PrefixCache, prefixCacheFor, setPrefixCacheBytes } from './prefix-cache.ts';

const NUMERIC = { decode: (ids: readonly number[]): string => ids.map((i) => ` ${i}`).join('') };
const VOCAB = 300;

let llama: CausalLM;
let qwen3: CausalLM;

beforeAll(async () => {
  const backend = testBackend();
  await initBackend(backend);
  // the fused attention path when the addon is built; the composition otherwise
  if (backend === 'wasm') enableNativeKernels();
  // GQA (4 query heads on 2 kv heads): cached rows are [KV, T, hd] blocks of several heads.
  llama = CausalLM.random(
    hfConfigFor({ arch: 'llama', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: VOCAB }),
    21,
  );
  qwen3 = CausalLM.random(
    hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: VOCAB }),
    5,
  );
});
afterAll(() => {
  llama.dispose();
  qwen3.dispose();
  setPrefixCacheBytes(0);
});

const seq = (rng: Rng, n: number): number[] => Array.from({ length: n }, () => rng.int(1, VOCAB - 1));

function opts(over: Partial<GenerateOptions>): GenerateOptions {
  return { temperature: 0, topK: 0, topP: 1, rng: new Rng(0), eosIds: [], decoder: NUMERIC, ...over };
}

/** Same tokens, logprobs within 1e-4 (float rounding of differently shaped matmuls). */
function expectSame(a: GenerateResult[], b: GenerateResult[]): void {
  expect(a.map((r) => r.tokenIds)).toEqual(b.map((r) => r.tokenIds));
  a.forEach((r, i) =>
    r.logprobs.forEach((lp, j) => expect(Math.abs(lp - (b[i]?.logprobs[j] as number))).toBeLessThan(1e-4)),
  );
}

function maxAbsDiff(a: tf.Tensor, b: tf.Tensor): number {
  const x = a.dataSync();
  const y = b.dataSync();
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs((x[i] as number) - (y[i] as number)));
  return m;
}

describe.each([
  ['llama', () => llama],
  ['qwen3', () => qwen3],
])('prefix cache on a random %s', (_name, model) => {
  it(
    'first-step logits of left-padded prompts with cached prefixes of different lengths equal the plain prefill to ' +
      '1e-4',
    () => {
      const m = model();
      const rng = new Rng(1);
      const ctx = seq(rng, 30);
      const other = seq(rng, 20);
      const cache = new PrefixCache(2 ** 26);
      cache.validate(m);
      const headT = m.inferenceHead(); // [D, V]
      try {
        // Warm the cache with two sequences: ctx and other.
        const warm = prefillWithCache(m, [ctx, other], {
          padId: 0,
          headT,
          minTokens: 0,
          stats: emptyPrefillStats(),
          cache,
        });
        warm.logits.dispose();
        cache.insert(ctx, warm.cache.rowKv(0));
        cache.insert(other, warm.cache.rowKv(1));
        warm.cache.dispose();
        // Hits of 30 (ctx + tail), 20 (a replay that changes ctx from token 20), 20 (other + tail), 0 (a stranger), 29
        // (ctx itself: its last token runs).
        const prompts = [
          [...ctx, ...seq(rng, 7)],
          [...ctx.slice(0, 20), ...seq(rng, 15)],
          [...other, ...seq(rng, 2)],
          seq(rng, 9),
          ctx,
        ];
        const stats = emptyPrefillStats();
        const before = { ...cache.stats };
        const on = prefillWithCache(m, prompts, { padId: 0, headT, minTokens: 0, stats, cache });
        const off = prefillPrompts(m, prompts, { padId: 0, headT, minTokens: 0, stats: emptyPrefillStats() });
        try {
          expect(maxAbsDiff(on.logits, off.logits)).toBeLessThan(1e-4);
          // Hand count: needed 37 + 35 + 22 + 9 + 30 = 133; hit 30 + 20 + 20 + 0 + 29 = 99; computed 133 - 99 = 34.
          expect(cache.stats.neededTokens - before.neededTokens).toBe(133);
          expect(cache.stats.hitTokens - before.hitTokens).toBe(99);
          expect(stats.prefillTokens).toBe(34);
          // A row taken back out of the batch is the plain prefill's row (the keys cached for ctx + 7).
          const row = on.cache.rowKv(0);
          const ref = off.cache.rowKv(0);
          row.forEach((l, i) => {
            expect(l.k.shape).toEqual([m.config.kvHeads, 37, m.config.headDim]);
            expect(maxAbsDiff(l.k, (ref[i] as { k: tf.Tensor }).k)).toBeLessThan(1e-4);
          });
          tf.dispose([...row.flatMap((l) => [l.k, l.v]), ...ref.flatMap((l) => [l.k, l.v])]);
        } finally {
          on.logits.dispose();
          off.logits.dispose();
          on.cache.dispose();
          off.cache.dispose();
        }
      } finally {
        headT.dispose();
        cache.dispose();
      }
    },
  );

  it('several turns: each turn reuses the conversation so far, tokens and logprobs equal an uncached run', async () => {
    const m = model();
    const rng = new Rng(2);
    const cache = new PrefixCache(2 ** 26);
    const before = tf.memory().numTensors;
    // Three agents of a group: one system prompt, different questions, with padding (different lengths).
    const system = seq(rng, 24);
    let convs = [
      [...system, ...seq(rng, 5)],
      [...system, ...seq(rng, 11)],
      [...system, ...seq(rng, 2)],
    ];
    let added = 0;
    let computed = 0;
    let prevLens: number[] = [];
    for (let turn = 0; turn < 3; turn++) {
      const reqs: GenerateRequest[] = convs.map((p) => ({ promptIds: p, maxNewTokens: 6 }));
      const stats = emptyPrefillStats();
      const on = await generate(m, reqs, opts({ prefixCache: cache, stats, prefixMinTokens: 16 }));
      const off = await generate(m, reqs, opts({ prefixMinTokens: 0 }));
      expectSame(on, off);
      if (turn > 0) {
        // Turns after the first compute only what the turn added: the last generated token and the tool result.
        computed += stats.prefillTokens;
      }
      // Next turn: the conversation, the reply and a tool result of 4 tokens.
      const next = convs.map((p, i) => [...p, ...(on[i] as GenerateResult).tokenIds, ...seq(rng, 4)]);
      if (turn > 0) added += convs.reduce((a, p, i) => a + p.length - ((prevLens[i] as number) ?? 0), 0);
      prevLens = convs.map((p) => p.length);
      convs = next;
    }
    // Per row per later turn: 1 (the last reply token, never fed) + 4 (tool result) computed, of 6 + 4 added.
    expect(computed).toBe(2 * 3 * 5);
    expect(added).toBe(2 * 3 * 10);
    expect(cache.stats.hitTokens).toBeGreaterThan(0);
    cache.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it(
    'replays of one context, each changing a different message, hit up to the change and decode as uncached (forced ' +
      'and sampled)',
    async () => {
      const m = model();
      const rng = new Rng(3);
      const cache = new PrefixCache(2 ** 26);
      const ctx = seq(rng, 60);
      // The rollout generated the context's last turn: the cache holds ctx.
      await generate(m, [{ promptIds: ctx, maxNewTokens: 1 }], opts({ prefixCache: cache }));
      const replays: GenerateRequest[] = [16, 25, 40, 59].map((cut, i) => ({
        promptIds: [...ctx.slice(0, cut), ...seq(rng, 8)],
        maxNewTokens: 5,
        ...(i % 2 === 0 ? { forcedTokens: seq(rng, 5) } : {}),
        seed: 100 + i,
      }));
      const stats = emptyPrefillStats();
      const on = await generate(m, replays, opts({ temperature: 1, prefixCache: cache, stats, prefixMinTokens: 0 }));
      const off = await generate(m, replays, opts({ temperature: 1, prefixMinTokens: 0 }));
      expectSame(on, off);
      expect(stats.prefillTokens).toBe(4 * 8);
      cache.dispose();
    },
  );
});

describe('nested shared prefixes in one batch', () => {
  it('every shared token is prefilled once (branches of branches first), and decoding equals the uncached run', async () => {
    const rng = new Rng(9);
    const ctx = seq(rng, 40);
    const [a, b, x, y] = [seq(rng, 10), seq(rng, 10), seq(rng, 10), seq(rng, 10)];
    // Replays of one context: two pairs that share 60 tokens each, and 40 between the pairs.
    const prompts = [
      [...ctx, ...a, ...b, ...seq(rng, 5)],
      [...ctx, ...x, ...y, ...seq(rng, 5)],
      [...ctx, ...a, ...b, ...seq(rng, 5)],
      [...ctx, ...x, ...y, ...seq(rng, 5)],
    ];
    const reqs = prompts.map((p) => ({ promptIds: p, maxNewTokens: 3 }));
    const cache = new PrefixCache(2 ** 26);
    const stats = emptyPrefillStats();
    const on = await generate(llama, reqs, opts({ prefixCache: cache, stats, prefixMinTokens: 16 }));
    const off = await generate(llama, reqs, opts({ prefixMinTokens: 0 }));
    expectSame(on, off);
    // Distinct tokens: ctx 40 + a b 20 + x y 20 + four tails of 5 = 100.
    expect(stats.prefillTokens).toBe(100);
    cache.dispose();
  });
});

describe('suffixBuckets', () => {
  it('batches rows whose rest is at least half the batch longest, longest first', () => {
    // The first exactness test's rests: 15 and 9 together, 7 alone (14 < 15), 2 and 1 together.
    expect(suffixBuckets([7, 15, 2, 9, 1])).toEqual([[1, 3], [0], [2, 4]]);
    expect(suffixBuckets([4, 4, 4])).toEqual([[0, 1, 2]]);
    expect(suffixBuckets([1, 300, 1, 2])).toEqual([[1], [3, 0, 2]]);
  });
});

describe('prefix cache memory', () => {
  it(
    'a budget of 3 sequences holds at most 3: the least recently used are disposed, tensors and bytes stay ' +
      'bounded',
    async () => {
      const rng = new Rng(4);
      // bytes of k and v of one token
      const perToken = 2 * llama.config.layers * llama.config.kvHeads * llama.config.headDim * 4;
      const budget = 3 * 40 * perToken;
      const cache = new PrefixCache(budget);
      const base = tf.memory().numTensors;
      const kept: number[][] = [];
      for (let i = 0; i < 10; i++) {
        const p = seq(rng, 39);
        kept.push(p);
        // stores 39 + 1 = 40 tokens
        await generate(llama, [{ promptIds: p, maxNewTokens: 2 }], opts({ prefixCache: cache }));
        expect(cache.bytes).toBeLessThanOrEqual(budget);
        expect(cache.size).toBeLessThanOrEqual(3);
        expect(tf.memory().numTensors - base).toBe(cache.size * 2 * llama.config.layers);
      }
      expect(cache.stats.insertions).toBe(10);
      expect(cache.stats.evictions).toBe(7);
      // The newest are served, the oldest are gone.
      expect(cache.match(kept[9] as number[], 39)?.length).toBe(39);
      expect(cache.match(kept[0] as number[], 39)).toBeUndefined();
      // A touched entry outlives newer untouched ones.
      cache.match(kept[7] as number[], 39);
      await generate(llama, [{ promptIds: seq(rng, 39), maxNewTokens: 2 }], opts({ prefixCache: cache }));
      expect(cache.match(kept[7] as number[], 39)?.length).toBe(39);
      expect(cache.match(kept[8] as number[], 39)).toBeUndefined();
      cache.dispose();
      expect(tf.memory().numTensors).toBe(base);
    },
  );

  it(
    'a conversation is stored once: a sequence that extends an entry replaces it, one it extends is not stored; ' +
      'shorter than a block is not stored',
    () => {
      const cache = new PrefixCache(2 ** 20);
      const kv = (n: number): { k: tf.Tensor3D; v: tf.Tensor3D }[] => [
        { k: tf.zeros([1, n, 2]) as tf.Tensor3D, v: tf.zeros([1, n, 2]) as tf.Tensor3D },
      ];
      const ids = (n: number, from = 1): number[] => Array.from({ length: n }, (_, i) => from + i);
      const base = tf.memory().numTensors;
      cache.insert(ids(20), kv(20));
      cache.insert(ids(40), kv(40));
      expect(cache.size).toBe(1);
      expect(cache.bytes).toBe(2 * 40 * 2 * 4);
      cache.insert(ids(33), kv(33));
      expect(cache.size).toBe(1);
      cache.insert([...ids(16), 99, 98, 97], kv(19));
      expect(cache.size).toBe(2);
      cache.insert(ids(15, 200), kv(15));
      expect(cache.size).toBe(2);
      expect(tf.memory().numTensors - base).toBe(4);
      expect(cache.match([...ids(30), 7], 30)?.length).toBe(30);
      expect(cache.match(ids(50), 60)?.length).toBe(40);
      expect(cache.match([...ids(16), 99, 98, 1], 18)?.length).toBe(18);
      expect(cache.match(ids(15), 15)).toBeUndefined();
      expect(cache.match(ids(40, 2), 40)).toBeUndefined();
      expect(() => cache.insert(ids(30, 5), kv(29))).toThrow(/30 tokens but keys of 29 positions/);
      cache.dispose();
      expect(tf.memory().numTensors).toBe(base);
      expect(() => new PrefixCache(-1)).toThrow(/maxBytes must be a non-negative number/);
    },
  );
});

describe('prefix cache and weight changes', () => {
  it('an assign to a weight, a LoRA attach and another model each empty the cache', async () => {
    const m = CausalLM.random(
      hfConfigFor({ arch: 'llama', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 48, vocab: VOCAB }),
      8,
    );
    const other = CausalLM.random(
      hfConfigFor({ arch: 'llama', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 48, vocab: VOCAB }),
      9,
    );
    setPrefixCacheBytes(2 ** 24);
    try {
      const p = seq(new Rng(5), 20);
      const fill = async (model: CausalLM): Promise<void> => {
        await generate(model, [{ promptIds: p, maxNewTokens: 2 }], opts({ prefixCache: prefixCacheFor(model) }));
      };
      await fill(m);
      expect(prefixCacheFor(m)?.size).toBe(1);
      // An optimizer step assigns new values: the keys of the old weights must not serve the new ones.
      const w = m.baseVariables().get('model.layers.0.self_attn.k_proj.weight') as tf.Variable;
      w.assign(tf.tidy(() => tf.mul(w, 1.5)));
      expect(prefixCacheFor(m)?.size).toBe(0);
      expect(prefixCacheFor(m)?.stats.invalidations).toBe(1);
      await fill(m);
      m.attachLora({ rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj'] }, 1);
      expect(prefixCacheFor(m)?.size).toBe(0);
      await fill(m);
      // Cached decode after the changes still equals the uncached one.
      const cached = await generate(
        m,
        [{ promptIds: [...p, 7, 8], maxNewTokens: 4 }],
        opts({ prefixCache: prefixCacheFor(m) }),
      );
      const plain = await generate(m, [{ promptIds: [...p, 7, 8], maxNewTokens: 4 }], opts({}));
      expectSame(cached, plain);
      expect(prefixCacheFor(other)?.size).toBe(0);
      setPrefixCacheBytes(0);
      expect(prefixCacheFor(m)).toBeUndefined();
    } finally {
      setPrefixCacheBytes(0);
      m.dispose();
      other.dispose();
    }
  });
});
