import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { bmm, linear, matmulBT } from './linear.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('the decoder matmuls and their gradients', () => {
  it('hand-computed 2x2: a=[[1,2],[3,4]], b=[[5,6],[7,8]], dy=ones -> da=[[11,15],[11,15]], db=[[4,4],[6,6]]', () => {
    // da = dy @ b^T: each row = [5+6, 7+8]; db = a^T @ dy: rows [1+3, 1+3], [2+4, 2+4].
    const a = tf.tensor2d([1, 2, 3, 4], [2, 2]);
    const b = tf.tensor2d([5, 6, 7, 8], [2, 2]);
    const [da, db] = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(linear(x as tf.Tensor2D, y as tf.Tensor2D)))([
      a,
      b,
    ]);
    expect(Array.from(da?.dataSync() ?? [])).toEqual([11, 15, 11, 15]);
    expect(Array.from(db?.dataSync() ?? [])).toEqual([4, 4, 6, 6]);
    // The tied head a @ b^T: d/da = dy @ b = rows [5+7, 6+8]; d/db = dy^T @ a = rows [1+3, 2+4].
    const [ta, tb] = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(matmulBT(x as tf.Tensor2D, y as tf.Tensor2D)))([
      a,
      b,
    ]);
    expect(Array.from(ta?.dataSync() ?? [])).toEqual([12, 14, 12, 14]);
    expect(Array.from(tb?.dataSync() ?? [])).toEqual([4, 6, 4, 6]);
    // bmm of one group is the 2-D product: [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]].
    expect(Array.from(bmm(tf.reshape(a, [1, 2, 2]), tf.reshape(b, [1, 2, 2])).dataSync())).toEqual([19, 22, 43, 50]);
    expect(Array.from(linear(a, b, tf.tensor1d([1, -1])).dataSync())).toEqual([20, 21, 44, 49]);
  });

  it('backward makes no transposed copy, and a frozen weight gets no gradient product', async () => {
    const x = tf.randomNormal([6, 4], 0, 1, 'float32', 1) as tf.Tensor2D; // [N, in]
    const w = tf.randomNormal([4, 3], 0, 1, 'float32', 2) as tf.Tensor2D; // [in, out]
    const kernels = async (f: () => tf.Tensor | tf.Tensor[]): Promise<string[]> => {
      const p = await tf.profile(f);
      tf.dispose(p.result as tf.Tensor | tf.Tensor[]);
      return p.kernels.map((k) => k.name);
    };
    const both = await kernels(() =>
      tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(linear(a as tf.Tensor2D, b as tf.Tensor2D)))([x, w]),
    );
    expect(both.filter((n) => n === 'BatchMatMul')).toHaveLength(3); // forward, dX, dW
    expect(both).not.toContain('Transpose');
    const onlyX = await kernels(() => tf.grad((a: tf.Tensor) => tf.sum(linear(a as tf.Tensor2D, w)))(x));
    expect(onlyX.filter((n) => n === 'BatchMatMul')).toHaveLength(2); // forward, dX
    tf.dispose([x, w]);
  });
});
