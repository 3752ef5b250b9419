import * as tf from '@tensorflow/tfjs';
import type { GradientAccumulator } from './accumulate.ts';
import type { AdamW } from './adamw.ts';
import { NonFiniteGradientError } from './diverged.ts';

/**
 * Global-norm gradient clipping, as torch.nn.utils.clip_grad_norm_ (Pascanu et al. 2013,
 * arXiv:1211.5063): norm = sqrt(sum_v ||g_v||^2); when norm > maxNorm every gradient is scaled by
 * maxNorm / (norm + 1e-6). Returns NEW tensors (the caller disposes inputs and outputs) and the norm
 * before clipping, read back with one host sync per step (for the `grad/norm` metric).
 * maxNorm = 0 turns clipping off (the norm is still measured).
 */
function globalNorm(grads: tf.NamedTensorMap): tf.Scalar {
  return tf.tidy(() => {
    const parts = Object.values(grads).map((g) => tf.sum(tf.square(g))); // [] each
    return (parts.length === 0 ? tf.scalar(0) : tf.sqrt(tf.addN(parts))) as tf.Scalar; // []
  });
}

/**
 * The pre-clip global norm (one host sync) and the factor clipping applies: maxNorm / (norm + 1e-6)
 * when norm > maxNorm > 0, else exactly 1. Throws NonFiniteGradientError on a NaN or Inf norm.
 */
function globalNormScale(grads: tf.NamedTensorMap, maxNorm: number): { norm: number; scale: number } {
  if (!(maxNorm >= 0)) throw new Error(`clipByGlobalNorm: maxNorm must be >= 0, got ${maxNorm}`);
  const normT = globalNorm(grads);
  const norm = normT.dataSync()[0] as number;
  normT.dispose();
  if (!Number.isFinite(norm)) throw new NonFiniteGradientError(norm);
  return { norm, scale: maxNorm > 0 && norm > maxNorm ? maxNorm / (norm + 1e-6) : 1 };
}

export function clipByGlobalNorm(
  grads: tf.NamedTensorMap,
  maxNorm: number,
): { grads: tf.NamedTensorMap; norm: number } {
  const { norm, scale } = globalNormScale(grads, maxNorm);
  const out: tf.NamedTensorMap = {};
  tf.tidy(() => {
    // same shape as g
    for (const [name, g] of Object.entries(grads)) out[name] = tf.keep(scale === 1 ? tf.clone(g) : tf.mul(g, scale));
  });
  return { grads: out, norm };
}

/**
 * The end of every update (GRPO, SFT, DPO): clip the accumulated gradients by global norm, then one
 * AdamW step at the step's learning rate `lr` (the loop's schedule value). Returns the pre-clip norm.
 * The optimizer reads the accumulator's own buffers: nothing is copied when the norm is within
 * bounds, and clipping scales the buffers in place, one at a time (the accumulator is reset before
 * its next use).
 */
export function clipAndStep(accumulator: GradientAccumulator, optimizer: AdamW, lr: number, gradClip: number): number {
  const { norm, scale } = globalNormScale(accumulator.grads(), gradClip);
  if (scale !== 1) accumulator.scale(scale);
  optimizer.applyGradients(accumulator.grads(), lr);
  return norm;
}
