import * as tf from '@tensorflow/tfjs';
import { isPacked } from '../bf16.ts';
import { embed, gatherPacked } from './embedding.ts';
import { bmm, linear, matmulBT } from './linear.ts';

/**
 * The decoder's matmul-like ops, chosen once per forward. Training uses the embedding lookup with
 * the native segment-sum gradient (embedding.ts); inference uses a plain gather (no gradient, no
 * custom-gradient scope: a decode step is ~200 small kernels, so per-kernel overhead is most of its
 * time on wasm). The matmuls are the same in both.
 */
export interface OpSet {
  linear(x: tf.Tensor2D, w: tf.Tensor2D, bias?: tf.Tensor1D): tf.Tensor2D; // [N, in] @ [in, out] (+ b)
  bmm(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D; // [G, M, K] @ [G, K, N]
  embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D; // [V, D] rows at ids [N]
  matmulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D; // [M, K] @ [N, K]^T
}

export const TRAIN_OPS: OpSet = { linear, bmm, embed, matmulBT };

export const INFER_OPS: OpSet = {
  linear,
  bmm,
  // [N, D]
  embed: (table, ids) => (isPacked(table) ? gatherPacked(table, ids) : (tf.gather(table, ids) as tf.Tensor2D)),
  matmulBT,
};
