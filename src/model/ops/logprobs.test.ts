import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { entropyFromLogits, selectedLogprobs } from './logprobs.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('selectedLogprobs', () => {
  it('hand-computed: logits [0, ln 3] target 1 -> ln(3/4); gradient [-3/4, 1/4] * -1', () => {
    // softmax([0, ln3]) = [1/4, 3/4]; log p(1) = ln 0.75; d(-logp)/dlogits = softmax - onehot = [0.25, -0.25].
    const logits = tf.tensor2d([0, Math.log(3)], [1, 2]);
    const t = tf.tensor1d([1], 'int32');
    expect(selectedLogprobs(logits, t).dataSync()[0]).toBeCloseTo(Math.log(0.75), 6);
    const g = tf
      .grad((x: tf.Tensor) => tf.neg(tf.sum(selectedLogprobs(x as tf.Tensor2D, t))))(logits)
      .dataSync();
    expect(g[0]).toBeCloseTo(0.25, 6);
    expect(g[1]).toBeCloseTo(-0.25, 6);
  });

  it('value and gradient equal autodiff of logSoftmax + one-hot sum, with a non-uniform upstream gradient', () => {
    tf.tidy(() => {
      const logits = tf.mul(tf.randomNormal([6, 11], 0, 1, 'float32', 3), 4) as tf.Tensor2D;
      const t = tf.tensor1d([0, 10, 5, 5, 2, 7], 'int32');
      const w = tf.tensor1d([1, -2, 0.5, 3, 0, -1]);
      const ref = (x: tf.Tensor2D): tf.Tensor => tf.sum(tf.mul(tf.logSoftmax(x), tf.oneHot(t, 11).toFloat()), 1);
      expect(tf.max(tf.abs(tf.sub(selectedLogprobs(logits, t), ref(logits)))).dataSync()[0]).toBeLessThan(1e-5);
      const got = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(selectedLogprobs(x as tf.Tensor2D, t), w)))(logits);
      const want = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(ref(x as tf.Tensor2D), w)))(logits);
      expect(tf.max(tf.abs(tf.sub(got, want))).dataSync()[0]).toBeLessThan(1e-5);
    });
  });

  it('entropy: uniform over 4 is ln 4, one-hot-like is ~0', () => {
    const e = entropyFromLogits(tf.tensor2d([0, 0, 0, 0, 100, 0, 0, 0], [2, 4])).dataSync();
    expect(e[0]).toBeCloseTo(Math.log(4), 5);
    expect(e[1]).toBeCloseTo(0, 5);
  });
});
