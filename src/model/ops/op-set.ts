import * as tf from '@tensorflow/tfjs';
import { embed } from './embedding.ts';
import { bmm, linear, matmulBT } from './linear.ts';

/**
 * The decoder's matmul-like ops, chosen once per forward. Training uses the
 * custom-gradient versions; inference (prefill, decode) uses the plain tfjs
 * ops, which compute the same values without customGrad's scope and identity kernels: a decode
 * step is ~200 small kernels, so per-kernel overhead is most of its time on wasm.
 */
export interface OpSet {
  linear(x: tf.Tensor2D, w: tf.Tensor2D, bias?: tf.Tensor1D): tf.Tensor2D; // [N, in] @ [in, out] (+ b)
  bmm(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D; // [G, M, K] @ [G, K, N]
  embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D; // [V, D] rows at ids [N]
  matmulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D; // [M, K] @ [N, K]^T
}

export const TRAIN_OPS: OpSet = { linear, bmm, embed, matmulBT };

export const INFER_OPS: OpSet = {
  linear: (x, w, bias) => {
    const y = tf.matMul(x, w) as tf.Tensor2D; // [N, out]
    return bias ? (tf.add(y, bias) as tf.Tensor2D) : y;
  },
  bmm: (a, b) => tf.matMul(a, b) as tf.Tensor3D,
  embed: (table, ids) => tf.gather(table, ids) as tf.Tensor2D,
  matmulBT: (a, b) => tf.matMul(a, tf.transpose(b)) as tf.Tensor2D,
};
