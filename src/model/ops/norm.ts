import * as tf from '@tensorflow/tfjs';

/** RMSNorm over the last axis (HF LlamaRMSNorm): x * rsqrt(mean(x^2) + eps) * weight. */
export function rmsNorm<T extends tf.Tensor>(x: T, weight: tf.Tensor1D, eps: number): T {
  const ms = tf.mean(tf.square(x), -1, true); // [..., 1]
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), weight) as T; // [..., D]
}
