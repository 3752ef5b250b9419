import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { kvWriteReady } from '../backend/native/index.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { emptyPrefillStats, prefillPrompts } from './prefill.ts';
import { KvCache } from './kv-cache.ts';
import { tidyObject } from '../model/tidy.ts';
import type { InferenceHead } from '../model/decoder.ts';

/**
 * Preallocated KV buffers written in place against the concatenating cache: the same logits bit for
 * bit over several decode steps with padding, a row dropping out and the buffers growing, the same
 * rows taken out for the prefix cache, and a flat tensor count.
 */
let model: CausalLM;
let headT: InferenceHead;
const PROMPTS = [
  [5, 9, 2, 7, 3, 11, 4],
  [8, 1, 6],
  [2, 2, 9, 40, 17],
];

beforeAll(async () => {
  await initBackend('wasm');
  model = CausalLM.random(
    hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 120 }),
    7,
  );
  headT = model.inferenceHead();
});
afterAll(() => {
  headT.dispose();
  model.dispose();
});

function prefill(): { logits: tf.Tensor2D; cache: KvCache } {
  return prefillPrompts(model, PROMPTS, { padId: 0, headT, minTokens: 1000, stats: emptyPrefillStats() });
}

/** Feeds `steps` fixed tokens; drops row 1 after step 2. Returns every step's logits, copied to host. */
function decode(cache: KvCache, reserveFirst: number | undefined, steps: number): Float32Array[] {
  if (reserveFirst !== undefined) cache.reserve(reserveFirst);
  let live = [0, 1, 2];
  const lengths = PROMPTS.map((p) => p.length);
  const out: Float32Array[] = [];
  for (let s = 0; s < steps; s++) {
    if (s === 2) {
      cache.keepRows([0, 2]);
      live = [0, 2];
    }
    if (reserveFirst !== undefined) cache.reserve(1);
    const step = tidyObject(() => {
      const ids = tf.tensor2d(
        live.map((r) => 3 + r + s),
        [live.length, 1],
        'int32',
      ); // [B, 1]
      const pos = tf.tensor2d(
        live.map((r) => (lengths[r] as number) + s),
        [live.length, 1],
        'float32',
      ); // [B, 1]
      const mask = cache.extendedMask(); // [B, Tk+1]
      const res = model.forwardCached(ids, pos, mask, cache.past, true, headT);
      return { logits: res.logits, kv: res.kv, mask };
    });
    cache.update(step.kv, step.mask);
    out.push(Float32Array.from(step.logits.dataSync()));
    step.logits.dispose();
  }
  return out;
}

describe('KvCache with preallocated buffers', () => {
  it('gives the concatenating cache’s logits bit for bit, row drops and growth included', () => {
    // without the native kernels (SHARP_NATIVE=0) the cache concatenates and both sides agree trivially
    const ready = kvWriteReady();
    const before = tf.memory().numTensors;
    const plain = prefill();
    plain.logits.dispose();
    const want = decode(plain.cache, undefined, 6);
    expect(plain.cache.buffered).toBe(false);
    const wantRow = plain.cache.rowKv(1);

    const buf = prefill();
    buf.logits.dispose();
    // room for 2 of the 6 steps: the buffers must grow on the way
    const got = decode(buf.cache, 2, 6);
    expect(buf.cache.buffered).toBe(ready);
    if (ready) expect(buf.cache.past[0]!.k.shape[1]).toBeGreaterThan(buf.cache.keyMask.shape[1]);
    for (let s = 0; s < want.length; s++) expect(Array.from(got[s]!)).toEqual(Array.from(want[s]!));
    const gotRow = buf.cache.rowKv(1);
    for (let l = 0; l < wantRow.length; l++) {
      expect(gotRow[l]!.k.shape).toEqual(wantRow[l]!.k.shape);
      expect(Array.from(gotRow[l]!.k.dataSync())).toEqual(Array.from(wantRow[l]!.k.dataSync()));
      expect(Array.from(gotRow[l]!.v.dataSync())).toEqual(Array.from(wantRow[l]!.v.dataSync()));
    }
    tf.dispose([...wantRow.flatMap((l) => [l.k, l.v]), ...gotRow.flatMap((l) => [l.k, l.v])]);
    plain.cache.dispose();
    buf.cache.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('stacks prefills of different widths into one cache whose rows decode as they would apart', () => {
    const before = tf.memory().numTensors;
    const opts = { padId: 0, headT, minTokens: 1000, stats: emptyPrefillStats() };
    const a = prefillPrompts(model, [PROMPTS[0] as number[]], opts); // width 7
    const b = prefillPrompts(model, [PROMPTS[1] as number[], PROMPTS[2] as number[]], opts); // width 5
    const stacked = KvCache.stack([a.cache, b.cache]);
    expect(stacked.keyMask.shape).toEqual([3, 7]);
    expect(Array.from(stacked.keyMask.dataSync())).toEqual([
      1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0,
    ]);
    // the rows' real keys come out as in their own parts, bit for bit
    for (const [cache, r, s] of [
      [a.cache, 0, 0],
      [b.cache, 1, 2],
    ] as const) {
      const want = cache.rowKv(r);
      const got = stacked.rowKv(s);
      for (let l = 0; l < want.length; l++)
        expect(Array.from(got[l]!.k.dataSync())).toEqual(Array.from(want[l]!.k.dataSync()));
      tf.dispose([...want.flatMap((l) => [l.k, l.v]), ...got.flatMap((l) => [l.k, l.v])]);
    }
    // decoding the stacked cache gives each row the logits of the whole batch's prefill, to float rounding
    const whole = prefill();
    whole.logits.dispose();
    const want = decode(whole.cache, 4, 4);
    const got = decode(stacked, 4, 4);
    for (let s = 0; s < want.length; s++)
      for (let i = 0; i < want[s]!.length; i++) expect(Math.abs(got[s]![i]! - want[s]![i]!)).toBeLessThan(1e-5);
    tf.dispose([a.logits, b.logits]);
    for (const c of [a.cache, b.cache, stacked, whole.cache]) c.dispose();
    expect(tf.memory().numTensors).toBe(before);
    expect(() => KvCache.stack([])).toThrow(/no parts/);
  });

  it('keeps the concatenation under SHARP_KV_BUFFERS=0', () => {
    process.env['SHARP_KV_BUFFERS'] = '0';
    try {
      const pre = prefill();
      pre.logits.dispose();
      pre.cache.reserve(8);
      expect(pre.cache.buffered).toBe(false);
      pre.cache.dispose();
    } finally {
      delete process.env['SHARP_KV_BUFFERS'];
    }
  });
});
