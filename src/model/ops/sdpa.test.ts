import * as tf from '@tensorflow/tfjs';
import { afterAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { loadTypedAddon } from '../../backend/native/addon.ts';
import { FUSED_KERNELS } from '../../backend/native/index.ts';
import { disableNativeKernels, enableNativeKernels } from '../../backend/native/register.ts';
import { Rng } from '../../random/rng.ts';
import { addonBuilt, compareFused, randArr, toTensor } from '../../../test/native-testkit.ts';
import { fusedHere } from './fused.ts';
import { TRAIN_OPS } from './op-set.ts';
import { sdpa, sdpaCached, sdpaCachedComposed, sdpaComposed } from './sdpa.ts';

/**
 * Scaled dot-product attention: the fused kernels (native/src/attention.cc) against the tfjs
 * composition, values and the gradients of q, k and v to 1e-5 normwise relative error, on the wasm
 * backend with the heap kernels and on the `native` backend; a hand-computed case on every backend.
 */

const hasAttn = (): boolean =>
  [FUSED_KERNELS.attnProbs, FUSED_KERNELS.attnProbsGrad, FUSED_KERNELS.attnApply, FUSED_KERNELS.attnApplyGrad].every(
    (n) => fusedHere(n),
  );

/** Additive bias [B, 1, T, T]: 0 where key k <= query t and key k is a real token (mask 1), else -1e9. */
function causalBias(keyMask: number[][]): tf.Tensor4D {
  const b = keyMask.length;
  const t = keyMask[0]!.length;
  const data: number[] = [];
  for (let i = 0; i < b; i++)
    for (let q = 0; q < t; q++) for (let k = 0; k < t; k++) data.push(k <= q && keyMask[i]![k] === 1 ? 0 : -1e9);
  return tf.tensor4d(data, [b, 1, t, t]); // [B, 1, T, T]
}

/**
 * Bias [B, 1, T, Tk] for T new queries after `past` cached keys: key k is visible to query t when k <= past + t and is
 * a real token.
 */
function cachedBias(keyMask: number[][], queries: number): tf.Tensor4D {
  const tk = keyMask[0]!.length;
  const past = tk - queries;
  const data: number[] = [];
  for (const row of keyMask)
    for (let q = 0; q < queries; q++) for (let k = 0; k < tk; k++) data.push(k <= past + q && row[k] === 1 ? 0 : -1e9);
  return tf.tensor4d(data, [keyMask.length, 1, queries, tk]); // [B, 1, T, Tk]
}

function suite(): void {
  it(
    'against a KV cache [B*KV, Tk, hd]: decode steps (one query row) and a prefill after cached keys match the ' +
      'composition, gradients included',
    () => {
      const rng = new Rng(13);
      // [B, T, Tk, H, KV, hd]; the third splits its heads across threads; the second's hd is not a multiple of 8.
      for (const [b, t, tk, h, kv, hd] of [
        [2, 1, 7, 4, 2, 8],
        [3, 1, 5, 2, 1, 12],
        [4, 1, 96, 8, 4, 32],
        [3, 3, 9, 2, 2, 4],
      ] as const) {
        const keyMask = Array.from({ length: b }, (_, i) =>
          Array.from({ length: tk }, (_, j) => (i === 0 && j < 2 ? 0 : 1)),
        ); // row 0 left-padded by 2
        const bias = cachedBias(keyMask, t); // [B, 1, T, Tk]
        const q = toTensor(randArr(rng, [b, t, h, hd], 2)); // [B, T, H, hd]
        const k = toTensor(randArr(rng, [b * kv, tk, hd], 2)); // [B*KV, Tk, hd]
        const v = toTensor(randArr(rng, [b * kv, tk, hd])); // [B*KV, Tk, hd]
        const scale = 1 / Math.sqrt(hd);
        const f = (x: tf.Tensor, y: tf.Tensor, z: tf.Tensor): tf.Tensor =>
          sdpaCached(x as tf.Tensor4D, y as tf.Tensor3D, z as tf.Tensor3D, bias, scale, TRAIN_OPS);
        const g = (x: tf.Tensor, y: tf.Tensor, z: tf.Tensor): tf.Tensor =>
          sdpaCachedComposed(x as tf.Tensor4D, y as tf.Tensor3D, z as tf.Tensor3D, bias, scale, TRAIN_OPS);
        const errs = compareFused(
          (x, y, z) => f(x!, y!, z!),
          (x, y, z) => g(x!, y!, z!),
          [q, k, v],
          rng,
        );
        expect(errs).toHaveLength(4);
        for (const e of errs) expect(e).toBeLessThanOrEqual(1e-5);
        tf.dispose([bias, q, k, v]);
      }
    },
  );

  it(
    'values and the gradients of q, k and v match the composition (GQA, left padding, one token, over the thread ' +
      'split)',
    () => {
      const rng = new Rng(11);
      // [B, T, H, KV, hd]; the third has 40*40*16 multiply-adds per head, so heads are split across threads.
      for (const [b, t, h, kv, hd] of [
        [2, 5, 4, 2, 8],
        [1, 1, 2, 1, 4],
        [3, 40, 4, 4, 16],
      ] as const) {
        const keyMask = Array.from({ length: b }, (_, i) =>
          Array.from({ length: t }, (_, j) => (i === 1 && j < 2 ? 0 : 1)),
        ); // row 1 left-padded by 2
        const bias = causalBias(keyMask); // [B, 1, T, T]
        const q = toTensor(randArr(rng, [b, t, h, hd], 2)); // [B, T, H, hd]
        const k = toTensor(randArr(rng, [b, t, kv, hd], 2)); // [B, T, KV, hd]
        const v = toTensor(randArr(rng, [b, t, kv, hd])); // [B, T, KV, hd]
        const scale = 1 / Math.sqrt(hd);
        const f = (x: tf.Tensor, y: tf.Tensor, z: tf.Tensor): tf.Tensor =>
          sdpa(x as tf.Tensor4D, y as tf.Tensor4D, z as tf.Tensor4D, bias, scale, TRAIN_OPS);
        const g = (x: tf.Tensor, y: tf.Tensor, z: tf.Tensor): tf.Tensor =>
          sdpaComposed(x as tf.Tensor4D, y as tf.Tensor4D, z as tf.Tensor4D, bias, scale, TRAIN_OPS);
        const errs = compareFused(
          (x, y, z) => f(x!, y!, z!),
          (x, y, z) => g(x!, y!, z!),
          [q, k, v],
          rng,
        );
        expect(errs).toHaveLength(4);
        for (const e of errs) expect(e).toBeLessThanOrEqual(1e-5);
        tf.dispose([bias, q, k, v]);
      }
    },
  );

  it('one gradient kernel call per input, no softmax or transpose, and nothing leaks', async () => {
    if (!hasAttn()) return; // a binary without the attention kernels: the composition ran above
    const rng = new Rng(12);
    const bias = causalBias([[1, 1, 1, 1]]); // [1, 1, 4, 4]
    const q = toTensor(randArr(rng, [1, 4, 2, 8])); // [B, T, H, hd]
    const k = toTensor(randArr(rng, [1, 4, 1, 8])); // [B, T, KV, hd]
    const v = toTensor(randArr(rng, [1, 4, 1, 8])); // [B, T, KV, hd]
    const before = tf.memory().numTensors;
    const p = await tf.profile(() =>
      tf.grads((a: tf.Tensor, c: tf.Tensor, d: tf.Tensor) =>
        tf.sum(sdpa(a as tf.Tensor4D, c as tf.Tensor4D, d as tf.Tensor4D, bias, 0.5, TRAIN_OPS)),
      )([q, k, v]),
    );
    const calls = (name: string): number => p.kernels.filter((x) => x.name === name).length;
    expect([
      calls(FUSED_KERNELS.attnProbs),
      calls(FUSED_KERNELS.attnApply),
      calls(FUSED_KERNELS.attnProbsGrad),
      calls(FUSED_KERNELS.attnApplyGrad),
    ]).toEqual([1, 1, 2, 2]);
    expect(calls('Softmax') + calls('Transpose') + calls('BatchMatMul')).toBe(0);
    tf.dispose(p.result as tf.Tensor[]);
    expect(tf.memory().numTensors).toBe(before);
    expect(() =>
      sdpa(q as tf.Tensor4D, k as tf.Tensor4D, v as tf.Tensor4D, causalBias([[1, 1, 1]]), 0.5, TRAIN_OPS),
    ).toThrow(/SharpAttnProbs: bias is \[1, 1, 3, 3\], expected \[1, 1, 4, 4\]/);
    tf.dispose([bias, q, k, v]);
  });

  handComputed();
}

/**
 * One head, scale 1: query 0 sees key 0 only (ctx 1); query 1 weighs keys (0, ln 3) as (1/4, 3/4): ctx 1/4 + 15/4 = 4.
 */
function handComputed(): void {
  it('gives the hand-computed context and its gradient in v', () => {
    const q = tf.tensor4d([1, 1], [1, 2, 1, 1]); // [B, T, H, hd]
    const k = tf.tensor4d([0, Math.log(3)], [1, 2, 1, 1]); // [B, T, KV, hd]
    const v = tf.tensor4d([1, 5], [1, 2, 1, 1]); // [B, T, KV, hd]
    const bias = causalBias([[1, 1]]); // [1, 1, 2, 2]
    const ctx = sdpa(q, k, v, bias, 1, TRAIN_OPS); // [1, 2, 1, 1]
    expect(Array.from(ctx.dataSync()).map((x) => Number(x.toFixed(5)))).toEqual([1, 4]);
    // d sum(ctx) / dv = column sums of P: key 0 gets 1 + 1/4, key 1 gets 3/4.
    const dv = tf.grad((x: tf.Tensor) => tf.sum(sdpa(q, k, x as tf.Tensor4D, bias, 1, TRAIN_OPS)))(v); // [1, 2, 1, 1]
    expect(Array.from(dv.dataSync()).map((x) => Number(x.toFixed(5)))).toEqual([1.25, 0.75]);
    tf.dispose([q, k, v, bias, ctx, dv]);
  });
}

describe.skipIf(!addonBuilt)('sdpa on wasm with the heap kernels', () => {
  afterAll(() => disableNativeKernels());
  it('uses the fused kernels where the binary has them', async () => {
    await initBackend('wasm');
    disableNativeKernels();
    enableNativeKernels();
    expect(hasAttn()).toBe(true);
  });
  suite();
});

describe.skipIf(loadTypedAddon().addon === undefined)('sdpa on the native backend', () => {
  it('uses the fused kernels', async () => {
    await initBackend('native');
    expect(hasAttn()).toBe(true);
  });
  suite();
});

describe('sdpa without the native kernels (cpu backend)', () => {
  it('runs the composition', async () => {
    await initBackend('cpu');
    expect(hasAttn()).toBe(false);
  });
  handComputed();
});
