import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../random/rng.ts';
import { nativeAdamW, type AdamWHyper } from './adamw.ts';
import { relErr } from '../../../test/reference/kernels.ts';
import { addonBuilt, randArr, setupNative } from '../../../test/native-testkit.ts';
import { disableNativeKernels } from './register.ts';
import { initBackend } from '../select.ts';

/** Float64 AdamW (PyTorch torch.optim.AdamW), the reference both paths must match. */
function adamWRef(
  w: Float64Array,
  g: Float64Array,
  m: Float64Array,
  v: Float64Array,
  t: number,
  hp: AdamWHyper,
  wd: number,
): void {
  for (let i = 0; i < w.length; i++) {
    w[i] = w[i]! * (1 - hp.lr * wd);
    m[i] = hp.beta1 * m[i]! + (1 - hp.beta1) * g[i]!;
    v[i] = hp.beta2 * v[i]! + (1 - hp.beta2) * g[i]! * g[i]!;
    const mh = m[i]! / (1 - Math.pow(hp.beta1, t));
    const vh = v[i]! / (1 - Math.pow(hp.beta2, t));
    w[i] = w[i]! - (hp.lr * mh) / (Math.sqrt(vh) + hp.eps);
  }
}

const HP: AdamWHyper = { lr: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: [0.1, 0] };

function runSteps(expectPath: 'native' | 'tfjs'): void {
  const rng = new Rng(51);
  const shapes = [[6, 5], [7]];
  const w0 = shapes.map((s) => randArr(rng, s));
  const vars = w0.map((a) => tf.variable(tf.tensor(Float32Array.from(a.data), a.shape)));
  const m = shapes.map((s) => tf.variable(tf.zeros(s)));
  const v = shapes.map((s) => tf.variable(tf.zeros(s)));
  const rw = w0.map((a) => Float64Array.from(a.data));
  const rm = shapes.map((s) => new Float64Array(s.reduce((p, d) => p * d, 1)));
  const rv = rm.map((a) => new Float64Array(a.length));
  for (let t = 1; t <= 5; t++) {
    const g = shapes.map((s) => randArr(rng, s));
    const gt = g.map((a) => tf.tensor(Float32Array.from(a.data), a.shape));
    const res = nativeAdamW(vars, gt, m, v, t, HP);
    expect(res.path).toBe(expectPath);
    g.forEach((a, i) => adamWRef(rw[i]!, a.data, rm[i]!, rv[i]!, t, HP, (HP.weightDecay as number[])[i]!));
    tf.dispose(gt);
  }
  vars.forEach((x, i) => expect(relErr(x.dataSync(), rw[i]!)).toBeLessThan(1e-5));
  m.forEach((x, i) => expect(relErr(x.dataSync(), rm[i]!)).toBeLessThan(1e-5));
  v.forEach((x, i) => expect(relErr(x.dataSync(), rv[i]!)).toBeLessThan(1e-5));
  tf.dispose([...vars, ...m, ...v]);
}

describe('nativeAdamW without native kernels (tfjs ops)', () => {
  beforeAll(async () => {
    await initBackend('wasm');
    disableNativeKernels();
  });
  it('matches the float64 AdamW over 5 steps', () => runSteps('tfjs'));
  it('rejects mismatched inputs with a one-line error', () => {
    const w = tf.variable(tf.zeros([2]), true, 'w');
    expect(() =>
      nativeAdamW([w], [tf.zeros([3])], [tf.variable(tf.zeros([2]))], [tf.variable(tf.zeros([2]))], 1, {
        ...HP,
        weightDecay: 0,
      }),
    ).toThrow(/grad of w has shape \[3\], want \[2\]/);
    expect(() =>
      nativeAdamW([w], [tf.zeros([2])], [tf.variable(tf.zeros([2]))], [tf.variable(tf.zeros([2]))], 0, {
        ...HP,
        weightDecay: 0,
      }),
    ).toThrow(/step must be an integer >= 1/);
  });
});

describe.skipIf(!addonBuilt)('nativeAdamW fused native kernel', () => {
  beforeAll(setupNative);
  afterAll(() => disableNativeKernels());

  it('matches the float64 AdamW over 5 steps, in place', () => runSteps('native'));

  it('never changes a snapshot: clone, or a tensor sharing the weight buffer', () => {
    const init = tf.tensor([1, 2, 3, 4], [4]);
    const w = tf.variable(init); // shares init's buffer (refcount 2)
    const snapClone = w.clone();
    const snapShared = tf.reshape(w, [2, 2]); // a reshape shares the buffer too
    const m = tf.variable(tf.zeros([4]));
    const v = tf.variable(tf.zeros([4]));
    const res = nativeAdamW([w], [tf.ones([4])], [m], [v], 1, { ...HP, weightDecay: 0 });
    expect(res.path).toBe('native');
    expect(res.copied).toBeGreaterThanOrEqual(1);
    // Step 1 with g = 1: m^ = 1, v^ = 1, so w moves by -lr/(1+eps) = -0.01.
    expect(Array.from(w.dataSync()).map((x) => +x.toFixed(5))).toEqual([0.99, 1.99, 2.99, 3.99]);
    expect(Array.from(init.dataSync())).toEqual([1, 2, 3, 4]);
    expect(Array.from(snapClone.dataSync())).toEqual([1, 2, 3, 4]);
    expect(Array.from(snapShared.dataSync())).toEqual([1, 2, 3, 4]);
    // The second step finds the buffer its own: updated in place, no copy, no new tensor.
    const g = tf.ones([4]);
    const numMid = tf.memory().numTensors;
    expect(nativeAdamW([w], [g], [m], [v], 2, { ...HP, weightDecay: 0 }).copied).toBe(0);
    expect(tf.memory().numTensors).toBe(numMid);
    tf.dispose([init, w, snapClone, snapShared, m, v, g]);
  });
});
