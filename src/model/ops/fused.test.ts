import * as tf from '@tensorflow/tfjs';
import { afterAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { loadTypedAddon } from '../../backend/native/addon.ts';
import { FUSED_KERNELS } from '../../backend/native/index.ts';
import { disableNativeKernels, enableNativeKernels } from '../../backend/native/register.ts';
import { Rng } from '../../random/rng.ts';
import { addonBuilt, compareFused, randArr, toTensor } from '../../../test/native-testkit.ts';
import { relErr } from '../../../test/reference/kernels.ts';
import { fusedHere } from './fused.ts';
import { rmsNorm, rmsNormComposed } from './norm.ts';
import { applyRope, applyRopeComposed, applyRopeQK, ropeTables } from './rope.ts';
import { siluGate, siluGateComposed } from './swiglu.ts';
import { selectedLogprobs, selectedLogprobsComposed } from './logprobs.ts';

/**
 * The fused RMSNorm, SwiGLU gate, RoPE and selected log-prob kernels against their tfjs compositions: values and the
 * gradients of every input (under a random upstream gradient) to 1e-5 normwise relative error, on
 * the wasm backend with the heap kernels and on the `native` backend (typed-array kernels). The
 * compositions run on the same backend with the fused kernels bypassed, so only the fusion differs.
 */

const hasFused = (): boolean => Object.values(FUSED_KERNELS).every((name) => fusedHere(name));

function suite(): void {
  it('RMSNorm: values and gradients of x and the weight, 2-D and per-head 4-D', () => {
    const rng = new Rng(3);
    for (const shape of [
      [37, 64],
      [2, 5, 3, 16],
      [1, 3],
    ]) {
      const d = shape[shape.length - 1]!;
      const x = toTensor(randArr(rng, shape, 3)); // shape
      const w = toTensor(randArr(rng, [d])) as tf.Tensor1D; // [D]
      const errs = compareFused(
        (a, b) => rmsNorm(a!, b as tf.Tensor1D, 1e-6),
        (a, b) => rmsNormComposed(a!, b as tf.Tensor1D, 1e-6),
        [x, w],
        rng,
      );
      for (const e of errs) expect(e).toBeLessThanOrEqual(1e-5);
      tf.dispose([x, w]);
    }
  });

  it('SwiGLU gate: values and gradients of gate and up, large gates included', () => {
    const rng = new Rng(4);
    const g = toTensor(randArr(rng, [48, 86], 6)); // [N, I]
    const u = toTensor(randArr(rng, [48, 86])); // [N, I]
    const errs = compareFused(
      (a, b) => siluGate(a!, b!),
      (a, b) => siluGateComposed(a!, b!),
      [g, u],
      rng,
    );
    for (const e of errs) expect(e).toBeLessThanOrEqual(1e-5);
    tf.dispose([g, u]);
  });

  it('RoPE: values and the gradient of x (the rotation by the negative angle), q and k apart', () => {
    const rng = new Rng(5);
    const positions = tf.tensor2d([0, 1, 2, 3, 4, 0, 0, 1, 2, 3], [2, 5]); // [B, T]
    const r = ropeTables(positions, 16, { type: 'default', theta: 10000 }); // [B, T, 1, 8] x2
    const x = toTensor(randArr(rng, [2, 5, 3, 16])) as tf.Tensor4D; // [B, T, H, hd]
    const errs = compareFused(
      (a) => applyRope(a as tf.Tensor4D, r),
      (a) => applyRopeComposed(a as tf.Tensor4D, r),
      [x],
      rng,
    );
    for (const e of errs) expect(e).toBeLessThanOrEqual(1e-5);
    const k = toTensor(randArr(rng, [2, 5, 1, 16])) as tf.Tensor4D; // [B, T, KV, hd]
    const [q2, k2] = applyRopeQK(x, k, r);
    expect(relErr(q2.dataSync(), applyRopeComposed(x, r).dataSync())).toBeLessThanOrEqual(1e-5);
    expect(relErr(k2.dataSync(), applyRopeComposed(k, r).dataSync())).toBeLessThanOrEqual(1e-5);
    tf.dispose([positions, r.cos, r.sin, x, k, q2, k2]);
  });

  it('log-prob of the target under a softmax: values and the gradient of the logits; a bad target fails clearly', () => {
    const rng = new Rng(7);
    // The second shape is over the size the kernels split across threads.
    for (const [n, v] of [
      [24, 300],
      [301, 1000],
    ] as const) {
      const logits = toTensor(randArr(rng, [n, v], 8)) as tf.Tensor2D; // [N, V], large spread
      const targets = tf.tensor1d(
        Array.from({ length: n }, (_, i) => (i * 37) % v),
        'int32',
      ); // [N]
      const errs = compareFused(
        (a) => selectedLogprobs(a as tf.Tensor2D, targets),
        (a) => selectedLogprobsComposed(a as tf.Tensor2D, targets),
        [logits],
        rng,
      );
      for (const e of errs) expect(e).toBeLessThanOrEqual(1e-5);
      tf.dispose([logits, targets]);
    }
    // Hand-computed: logits [0, ln 3] -> log p(1) = ln(3/4).
    const two = tf.tensor2d([0, Math.log(3)], [1, 2]); // [1, 2]
    expect(selectedLogprobs(two, tf.tensor1d([1], 'int32')).dataSync()[0]).toBeCloseTo(Math.log(0.75), 6);
    if (hasFused())
      expect(() => selectedLogprobs(two, tf.tensor1d([2], 'int32')).dataSync()).toThrow(
        /target 2 of row 0 is outside \[0, 2\)/,
      );
    tf.dispose([two]);
  });

  it('a weight outside the gradient gets no gradient kernel call, and nothing leaks', async () => {
    if (!hasFused()) return; // a binary without the fused kernels: the compositions ran above
    const rng = new Rng(6);
    const x = toTensor(randArr(rng, [16, 32])); // [N, D]
    const w = toTensor(randArr(rng, [32])) as tf.Tensor1D; // [D]
    const before = tf.memory().numTensors;
    const p = await tf.profile(() => tf.grad((a: tf.Tensor) => tf.sum(rmsNorm(a, w, 1e-6)))(x)); // [N, D]
    expect(p.kernels.filter((k) => k.name === FUSED_KERNELS.rmsNormGrad)).toHaveLength(1);
    (p.result as tf.Tensor).dispose();
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([x, w]);
  });
}

describe.skipIf(!addonBuilt)('fused kernels on wasm with the heap kernels', () => {
  afterAll(() => disableNativeKernels());
  it('are registered where the binary has them', async () => {
    await initBackend('wasm');
    disableNativeKernels();
    const status = enableNativeKernels();
    expect(status.mode).toBe('native');
    if (!hasFused()) {
      // A binary built before the fused kernels: they stay unregistered and the compositions run.
      expect(status.kernels).not.toContain(FUSED_KERNELS.rmsNorm);
      return;
    }
    expect(status.kernels).toEqual(expect.arrayContaining(Object.values(FUSED_KERNELS)));
  });
  suite();
});

describe.skipIf(loadTypedAddon().addon === undefined)('fused kernels on the native backend', () => {
  it('are registered', async () => {
    await initBackend('native');
    expect(tf.getBackend()).toBe('native');
    expect(hasFused()).toBe(true); // the typed-array binding came with them
  });
  suite();
});

describe('without the native kernels', () => {
  it('the ops fall back to their compositions (cpu backend)', async () => {
    await initBackend('cpu');
    expect(fusedHere(FUSED_KERNELS.rmsNorm)).toBe(false);
    const x = tf.tensor2d([1, 2, 3, 4], [1, 4]); // [1, 4]
    const w = tf.tensor1d([1, 1, 1, 1]); // [4]
    // mean(x^2) = 7.5: y = x / sqrt(7.5 + 0)
    expect(Array.from(rmsNorm(x, w, 0).dataSync()).map((v) => Number(v.toFixed(5)))).toEqual(
      [1, 2, 3, 4].map((v) => Number((v / Math.sqrt(7.5)).toFixed(5))),
    );
  });
});
