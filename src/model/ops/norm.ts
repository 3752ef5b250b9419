import * as tf from '@tensorflow/tfjs';
import { FUSED_KERNELS } from '../../backend/native/index.ts';
import { fusedHere, runFused } from './fused.ts';

/**
 * RMSNorm over the last axis (HF LlamaRMSNorm): x * rsqrt(mean(x^2) + eps) * weight. One fused
 * kernel each way where the native kernels serve the backend, else the tfjs composition.
 */
export function rmsNorm<T extends tf.Tensor>(x: T, weight: tf.Tensor1D, eps: number): T {
  if (fusedHere(FUSED_KERNELS.rmsNorm)) return runFused<T>(FUSED_KERNELS.rmsNorm, { x, weight }, { eps }); // [..., D]
  return rmsNormComposed(x, weight, eps);
}

/** The same norm as tfjs ops (backends without the fused kernel; the reference of its tests). */
export function rmsNormComposed<T extends tf.Tensor>(x: T, weight: tf.Tensor1D, eps: number): T {
  const ms = tf.mean(tf.square(x), -1, true); // [..., 1]
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), weight) as T; // [..., D]
}
