/**
 * The decoder's matmuls, as plain tf.matMul: tfjs's BatchMatMul gradient already carries the
 * transposes as transposeA/B flags (dA = dY B^T, dB = A^T dY), which the native kernels hand to
 * sgemm and the pure-wasm fallback applies inside its own BatchMatMul (src/backend/native/fallback.ts),
 * so no transposed copy is made; and the tape asks for each input's gradient only where it is
 * needed (a frozen base weight under LoRA gets no dW product).
 */
import * as tf from '@tensorflow/tfjs';
import { bf16MatMul, isPacked } from '../bf16.ts';

/** Batched a @ b for a [G, M, K], b [G, K, N] -> [G, M, N] (attention scores and mixing). */
export function bmm(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D {
  return tf.matMul(a, b); // [G, M, N]
}

/**
 * a @ op(b) for a [M, K] and b [K, N] or, with transposeB, [N, K]; b may be a packed bfloat16
 * weight (../bf16.ts).
 */
export function matmulWeight(a: tf.Tensor2D, b: tf.Tensor2D, transposeB: boolean): tf.Tensor2D {
  return isPacked(b) ? bf16MatMul(a, b, transposeB) : tf.matMul(a, b, false, transposeB); // [M, N]
}

/** a @ b^T for a [M, K], b [N, K] -> [M, N] (the tied LM head: hidden @ embed_tokens^T). */
export function matmulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return matmulWeight(a, b, true); // [M, N]
}

/** nn.Linear with the weight stored [in, out]: x [N, in] -> [N, out] (+ bias [out]). */
export function linear(x: tf.Tensor2D, w: tf.Tensor2D, bias?: tf.Tensor1D): tf.Tensor2D {
  const y = matmulWeight(x, w, false); // [N, out]
  return bias ? (tf.add(y, bias) as tf.Tensor2D) : y; // [N, out]
}
