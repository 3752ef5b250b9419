import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { stopGradient } from './stop-gradient.ts';

describe('stopGradient', () => {
  it('keeps the values and zeroes the gradient through it: d/dx sum(x * sg(x)) = x, not 2x', () => {
    const x = tf.tensor2d([[1, -2], [3, 0.5]]); // [2, 2]
    const sg = stopGradient(x);
    expect(Array.from(sg.dataSync())).toEqual([1, -2, 3, 0.5]);
    const g = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(v, stopGradient(v))))(x); // [2, 2]
    expect(Array.from(g.dataSync())).toEqual([1, -2, 3, 0.5]);
    const r = tf.grad((v: tf.Tensor) => tf.sum(tf.exp(tf.sub(v, stopGradient(v)))))(x); // [2, 2] ratio 1, gradient 1
    expect(Array.from(r.dataSync())).toEqual([1, 1, 1, 1]);
    tf.dispose([x, sg, g, r]);
  });
});
