import * as tf from '@tensorflow/tfjs';

/**
 * Matmuls with hand-written gradients that use explicit `tf.transpose` and never the transposeA/B
 * flags of tf.matMul: on the wasm backend a flagged (or batched-with-flags) matmul runs at 0.7-1.7
 * GFLOP/s against 15-18 for a plain 2-D one (technique 2). Inputs the gradient
 * needs go through `save()` (technique 5) so tfjs keeps them alive for the backward pass.
 */

type Saver = tf.GradSaveFunc;

const matmul2dOp = tf.customGrad((...args: (tf.Tensor | Saver)[]) => {
  const [a, b, save] = args as [tf.Tensor2D, tf.Tensor2D, Saver];
  save([a, b]);
  return {
    value: tf.matMul(a, b), // [M, N]
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as [tf.Tensor2D, tf.Tensor2D];
      return [
        tf.matMul(dy as tf.Tensor2D, tf.transpose(sb)), // [M, N] @ [N, K] -> [M, K]
        tf.matMul(tf.transpose(sa), dy as tf.Tensor2D), // [K, M] @ [M, N] -> [K, N]
      ];
    },
  };
});

/** a @ b for a [M, K], b [K, N] -> [M, N]. */
export function matmul2d(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy('matmul2d', () => matmul2dOp(a, b)) as tf.Tensor2D; // named scope: tf.profile tells the custom-gradient ops apart
}

const matmulBTOp = tf.customGrad((...args: (tf.Tensor | Saver)[]) => {
  const [a, b, save] = args as [tf.Tensor2D, tf.Tensor2D, Saver];
  save([a, b]);
  return {
    value: tf.matMul(a, tf.transpose(b)), // [M, K] @ [K, N] -> [M, N]
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as [tf.Tensor2D, tf.Tensor2D];
      return [
        tf.matMul(dy as tf.Tensor2D, sb), // [M, N] @ [N, K] -> [M, K]
        // (a^T @ dy)^T transposes K*N values instead of dy's M*N (M = tokens >> K = hidden).
        tf.transpose(tf.matMul(tf.transpose(sa), dy as tf.Tensor2D)), // [K, N] -> [N, K]
      ];
    },
  };
});

/** a @ b^T for a [M, K], b [N, K] -> [M, N] (the tied LM head: hidden @ embed_tokens^T). */
export function matmulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy('matmulBT', () => matmulBTOp(a, b)) as tf.Tensor2D;
}

const bmmOp = tf.customGrad((...args: (tf.Tensor | Saver)[]) => {
  const [a, b, save] = args as [tf.Tensor3D, tf.Tensor3D, Saver];
  save([a, b]);
  return {
    value: tf.matMul(a, b), // [G, M, N]
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as [tf.Tensor3D, tf.Tensor3D];
      return [
        tf.matMul(dy as tf.Tensor3D, tf.transpose(sb, [0, 2, 1])), // [G, M, N] @ [G, N, K] -> [G, M, K]
        tf.matMul(tf.transpose(sa, [0, 2, 1]), dy as tf.Tensor3D), // [G, K, M] @ [G, M, N] -> [G, K, N]
      ];
    },
  };
});

/** Batched a @ b for a [G, M, K], b [G, K, N] -> [G, M, N] (attention scores and mixing). */
export function bmm(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D {
  return tf.tidy('bmm', () => bmmOp(a, b)) as tf.Tensor3D;
}

/** nn.Linear with the weight stored [in, out]: x [N, in] -> [N, out] (+ bias [out]). */
export function linear(x: tf.Tensor2D, w: tf.Tensor2D, bias?: tf.Tensor1D): tf.Tensor2D {
  const y = matmul2d(x, w); // [N, out]
  return bias ? tf.add(y, bias) : y; // [N, out]
}
