import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { GradientAccumulator } from './accumulate.ts';
import { AdamW } from './adamw.ts';
import { clipAndStep, clipByGlobalNorm } from './clip.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('clipByGlobalNorm', () => {
  const grads = () => ({ a: tf.tensor1d([3, 0]), b: tf.tensor2d([[0, 4]]) }); // norm sqrt(9 + 16) = 5

  it('scales by maxNorm / (norm + 1e-6) when the norm is above maxNorm', () => {
    const g = grads();
    const { grads: out, norm } = clipByGlobalNorm(g, 1);
    expect(norm).toBeCloseTo(5, 6);
    // 3 / 5.000001 = 0.5999999, 4 / 5.000001 = 0.7999998
    expect(out.a.dataSync()[0]).toBeCloseTo(0.6, 5);
    expect(out.b.dataSync()[1]).toBeCloseTo(0.8, 5);
    tf.dispose([g, out]);
  });

  it('leaves gradients unchanged below maxNorm or when off, and still reports the norm', () => {
    for (const maxNorm of [10, 0]) {
      const g = grads();
      const { grads: out, norm } = clipByGlobalNorm(g, maxNorm);
      expect(norm).toBeCloseTo(5, 6);
      expect(Array.from(out.b.dataSync())).toEqual([0, 4]);
      expect(out.b).not.toBe(g.b); // always new tensors: the caller disposes both
      tf.dispose([g, out]);
    }
  });

  it('fails on a NaN gradient with a one-line error', () => {
    const g = { a: tf.tensor1d([Number.NaN]) };
    expect(() => clipByGlobalNorm(g, 1)).toThrow('clipByGlobalNorm: gradient norm is NaN');
    tf.dispose(g);
  });

  it('creates no lasting tensors besides its outputs', () => {
    const g = grads();
    const before = tf.memory().numTensors;
    const { grads: out } = clipByGlobalNorm(g, 1);
    expect(tf.memory().numTensors - before).toBe(2);
    tf.dispose([g, out]);
  });
});

describe('clipAndStep', () => {
  it('clips and takes one AdamW step at the given lr (hand-computed)', () => {
    const w = tf.variable(tf.tensor1d([1, 1]), true, 'apply_test_w'); // [2]
    const acc = new GradientAccumulator([w]);
    // loss = 3 w0 + 4 w1: gradient [3, 4], global norm 5
    acc.add(() => ({ loss: tf.sum(tf.mul(w, tf.tensor1d([3, 4]))) as tf.Scalar, stats: {} }));
    acc.finish();
    const opt = new AdamW({ lr: 1 });
    const norm = clipAndStep(acc, opt, 0.1, 1);
    expect(norm).toBeCloseTo(5, 5);
    // First Adam step moves each weight by lr * sign(g) whatever the clip scale: [0.9, 0.9] at lr 0.1 (not the default 1)
    const v = w.dataSync();
    expect(v[0]).toBeCloseTo(0.9, 5);
    expect(v[1]).toBeCloseTo(0.9, 5);
    acc.dispose();
    opt.dispose();
    w.dispose();
  });
});
