import * as tf from '@tensorflow/tfjs';
import type { GradientAccumulator } from './accumulate.ts';
import type { AdamW } from './adamw.ts';
import { clipByGlobalNorm } from './clip.ts';

/**
 * The end of every update (GRPO, SFT, DPO): clip the accumulated gradients by global norm, set the
 * scheduled learning rate, take one AdamW step. Returns the pre-clip gradient norm.
 */
export function applyAccumulated(accumulator: GradientAccumulator, optimizer: AdamW, lr: number, gradClip: number): number {
  const { grads, norm } = clipByGlobalNorm(accumulator.grads(), gradClip);
  try {
    optimizer.setLearningRate(lr);
    optimizer.applyGradients(grads);
  } finally {
    tf.dispose(grads);
  }
  return norm;
}
