import * as tf from '@tensorflow/tfjs';

/**
 * Matmuls with hand-written gradients whose products carry the transposes as tf.matMul's
 * transposeA/B flags, so no transposed copy is made: the native kernels hand the flags to sgemm,
 * and the pure-wasm fallback (the stock wasm kernel is slow with flags) transposes inside its own
 * BatchMatMul (src/backend/native/fallback.ts). Inputs the gradient needs go through `save()` so
 * tfjs keeps them alive for the backward pass.
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
        tf.matMul(dy as tf.Tensor2D, sb, false, true), // [M, N] @ [K, N]^T -> [M, K]
        tf.matMul(sa, dy as tf.Tensor2D, true, false), // [M, K]^T @ [M, N] -> [K, N]
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
    value: tf.matMul(a, b, false, true), // [M, K] @ [N, K]^T -> [M, N]
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as [tf.Tensor2D, tf.Tensor2D];
      return [
        tf.matMul(dy as tf.Tensor2D, sb), // [M, N] @ [N, K] -> [M, K]
        tf.matMul(dy as tf.Tensor2D, sa, true, false), // [M, N]^T @ [M, K] -> [N, K]
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
        tf.matMul(dy as tf.Tensor3D, sb, false, true), // [G, M, N] @ [G, K, N]^T -> [G, M, K]
        tf.matMul(sa, dy as tf.Tensor3D, true, false), // [G, M, K]^T @ [G, M, N] -> [G, K, N]
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
