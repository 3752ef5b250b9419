import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { bmm, linear, matmul2d, matmulBT } from './linear.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

const close = (a: tf.Tensor, b: tf.Tensor, tol = 1e-5): void => {
  expect(a.shape).toEqual(b.shape);
  expect(tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]).toBeLessThan(tol);
};

describe('custom-gradient matmuls equal tf autodiff of tf.matMul', () => {
  it('hand-computed 2x2: a=[[1,2],[3,4]], b=[[5,6],[7,8]], dy=ones -> da=[[11,15],[11,15]], db=[[4,4],[6,6]]', () => {
    // da = dy @ b^T: each row = [5+6, 7+8]; db = a^T @ dy: rows [1+3, 1+3], [2+4, 2+4].
    const a = tf.tensor2d([1, 2, 3, 4], [2, 2]);
    const b = tf.tensor2d([5, 6, 7, 8], [2, 2]);
    const [da, db] = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(matmul2d(x as tf.Tensor2D, y as tf.Tensor2D)))([a, b]);
    expect(Array.from(da?.dataSync() ?? [])).toEqual([11, 15, 11, 15]);
    expect(Array.from(db?.dataSync() ?? [])).toEqual([4, 4, 6, 6]);
  });

  it('matmul2d, matmulBT, bmm, linear on random shapes', () => {
    tf.tidy(() => {
      const a = tf.randomNormal([5, 7], 0, 1, 'float32', 1) as tf.Tensor2D;
      const b = tf.randomNormal([7, 3], 0, 1, 'float32', 2) as tf.Tensor2D;
      const bt = tf.randomNormal([3, 7], 0, 1, 'float32', 3) as tf.Tensor2D;
      const w = tf.randomNormal([5, 3], 0, 1, 'float32', 4); // upstream weights so dy is not all ones
      const loss = (f: (x: tf.Tensor2D, y: tf.Tensor2D) => tf.Tensor) => (x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(f(x as tf.Tensor2D, y as tf.Tensor2D), w));
      const got = tf.grads(loss(matmul2d))([a, b]);
      const want = tf.grads(loss((x, y) => tf.matMul(x, y)))([a, b]);
      got.forEach((g, i) => close(g, want[i] as tf.Tensor));
      const gotBT = tf.grads(loss(matmulBT))([a, bt]);
      const wantBT = tf.grads(loss((x, y) => tf.matMul(x, y, false, true)))([a, bt]);
      gotBT.forEach((g, i) => close(g, wantBT[i] as tf.Tensor));
      close(matmulBT(a, bt), tf.matMul(a, bt, false, true));

      const a3 = tf.randomNormal([4, 5, 6], 0, 1, 'float32', 5);
      const b3 = tf.randomNormal([4, 6, 2], 0, 1, 'float32', 6);
      const w3 = tf.randomNormal([4, 5, 2], 0, 1, 'float32', 7);
      const l3 = (f: (x: tf.Tensor3D, y: tf.Tensor3D) => tf.Tensor) => (x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(f(x as tf.Tensor3D, y as tf.Tensor3D), w3));
      const g3 = tf.grads(l3(bmm))([a3, b3]);
      const r3 = tf.grads(l3((x, y) => tf.matMul(x, y)))([a3, b3]);
      g3.forEach((g, i) => close(g, r3[i] as tf.Tensor));

      const bias = tf.tensor1d([1, -2, 3]);
      close(linear(a, b, bias), tf.add(tf.matMul(a, b), bias));
    });
  });
});
