import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { nativeKernelHere } from '../../backend/native/index.ts';
import { initBackend } from '../../backend/select.ts';
import { embed } from './embedding.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('embed', () => {
  it('gathers rows and sums the gradient of repeated ids (hand-computed)', () => {
    // table 4x2, ids [2, 0, 2]; loss = sum(out * [[1,2],[3,4],[5,6]]) -> dTable row 2 = [1+5, 2+6], row 0 = [3, 4],
    // rows 1, 3 = 0.
    const table = tf.tensor2d([0, 1, 2, 3, 4, 5, 6, 7], [4, 2]);
    const ids = tf.tensor1d([2, 0, 2], 'int32');
    expect(Array.from(embed(table, ids).dataSync())).toEqual([4, 5, 0, 1, 4, 5]);
    const up = tf.tensor2d([1, 2, 3, 4, 5, 6], [3, 2]);
    const g = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(embed(t as tf.Tensor2D, ids), up)))(table);
    expect(Array.from(g.dataSync())).toEqual([3, 4, 0, 0, 6, 8, 0, 0]);
  });

  it('sums the gradient of a batch of one distinct id, and of no ids at all, into the right rows', () => {
    tf.tidy(() => {
      const table = tf.tensor2d([0, 1, 2, 3, 4, 5], [3, 2]);
      const ids = tf.tensor1d([1, 1], 'int32');
      const up = tf.tensor2d([1, 2, 3, 4], [2, 2]);
      const g = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(embed(t as tf.Tensor2D, ids), up)))(table);
      expect(Array.from(g.dataSync())).toEqual([0, 0, 4, 6, 0, 0]);
      const none = tf.grad((t: tf.Tensor) => tf.sum(embed(t as tf.Tensor2D, tf.tensor1d([], 'int32'))))(table);
      expect(Array.from(none.dataSync())).toEqual([0, 0, 0, 0, 0, 0]);
    });
  });

  it('takes the native segment sum where it serves the backend, else a scatter of the rows of dy', async () => {
    const table = tf.randomNormal([50, 8], 0, 1, 'float32', 1) as tf.Tensor2D;
    const ids = tf.tensor1d([3, 7, 3, 49], 'int32');
    const info = await tf.profile(() => tf.grad((t: tf.Tensor) => tf.sum(embed(t as tf.Tensor2D, ids)))(table));
    const names = new Set(info.kernelNames);
    const native = nativeKernelHere('UnsortedSegmentSum');
    expect([names.has('UnsortedSegmentSum'), names.has('ScatterNd')]).toEqual(native ? [true, false] : [false, true]);
    tf.dispose([table, ids, ...(info.result instanceof tf.Tensor ? [info.result] : [])]);
  });

  it('equals autodiff of a one-hot matmul on a random batch', () => {
    tf.tidy(() => {
      const table = tf.randomNormal([50, 8], 0, 1, 'float32', 1) as tf.Tensor2D;
      const ids = tf.tensor1d([3, 7, 3, 49, 0, 7, 7, 12], 'int32');
      const up = tf.randomNormal([8, 8], 0, 1, 'float32', 2);
      const got = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(embed(t as tf.Tensor2D, ids), up)))(table);
      const want = tf.grad((t: tf.Tensor) =>
        tf.sum(tf.mul(tf.matMul(tf.oneHot(ids, 50).toFloat(), t as tf.Tensor2D), up)),
      )(table);
      expect(tf.max(tf.abs(tf.sub(got, want))).dataSync()[0]).toBeLessThan(1e-5);
    });
  });
});
