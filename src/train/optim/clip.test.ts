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
    // First Adam step moves each weight by lr * sign(g) whatever the clip scale: [0.9, 0.9] at lr 0.1 (not the default
    // 1)
    const v = w.dataSync();
    expect(v[0]).toBeCloseTo(0.9, 5);
    expect(v[1]).toBeCloseTo(0.9, 5);
    acc.dispose();
    opt.dispose();
    w.dispose();
  });
});

describe('clipAndStep without a gradient copy', () => {
  /** Two variables, their accumulated gradients of loss = sum(c * w) (gradient c), norm sqrt(9 + 16 + 144) = 13. */
  function setup(tag: string): { vars: tf.Variable[]; acc: GradientAccumulator } {
    const a = tf.variable(tf.tensor1d([1, -2]), true, `nocopy_${tag}_a`); // [2]
    const b = tf.variable(tf.tensor2d([[0.5, 3]]), true, `nocopy_${tag}_b`); // [1, 2]
    const acc = new GradientAccumulator([a, b]);
    acc.add(() => ({
      loss: tf.add(tf.sum(tf.mul(a, tf.tensor1d([3, 4]))), tf.sum(tf.mul(b, tf.tensor2d([[12, 0]])))) as tf.Scalar,
      stats: {},
    }));
    acc.finish();
    return { vars: [a, b], acc };
  }

  /** Records which gradient tensors the step received. */
  class Recording extends AdamW {
    seen: tf.Tensor[] = [];
    override applyGradients(g: tf.NamedTensorMap, lr?: number): void {
      this.seen = Object.values(g);
      super.applyGradients(g, lr);
    }
  }

  for (const maxNorm of [100, 0, 1]) {
    it(
      `maxNorm ${maxNorm}: the same update as the copying path (clipByGlobalNorm, then the step); ` +
        `${maxNorm === 1 ? 'scaled in place' : 'the accumulator buffers themselves'}`,
      () => {
        const opts = { lr: 0.1, weightDecay: 0.01, beta2: 0.9 };
        const x = setup(`x${maxNorm}`);
        const before = tf.memory().numTensors;
        const opt = new Recording(opts);
        const buffers = Object.values(x.acc.grads());
        const norm = clipAndStep(x.acc, opt, 0.1, maxNorm);
        expect(opt.seen.length).toBe(2);
        opt.seen.forEach((t, i) => expect(t).toBe(buffers[i])); // the accumulator's own tensors, not copies
        if (maxNorm !== 1) expect(opt.seen.map((t) => t.dataId)).toEqual(buffers.map((t) => t.dataId));
        // Two moment Variables per variable are the only new tensors.
        expect(tf.memory().numTensors - before).toBe(4);

        const y = setup(`y${maxNorm}`);
        const ref = new AdamW(opts);
        const clipped = clipByGlobalNorm(y.acc.grads(), maxNorm);
        ref.applyGradients(clipped.grads, 0.1);
        tf.dispose(clipped.grads);
        expect(norm).toBeCloseTo(13, 5);
        expect(clipped.norm).toBe(norm);
        for (let i = 0; i < 2; i++)
          expect(Array.from(x.vars[i]?.dataSync() ?? [])).toEqual(Array.from(y.vars[i]?.dataSync() ?? []));
        // Clipped to norm 1: the gradient [3, 4] / 13.000001 reached the second step's moments.
        if (maxNorm === 1) expect(x.acc.grads()[x.vars[0]?.name as string]?.dataSync()[0]).toBeCloseTo(3 / 13, 6);
        for (const s of [x, y]) {
          s.acc.dispose();
          tf.dispose(s.vars);
        }
        opt.dispose();
        ref.dispose();
      },
    );
  }
});
