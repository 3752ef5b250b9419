import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../errors.ts';

/**
 * A non-finite loss or gradient (NaN/Inf from a too-large learning rate, broken data or weights)
 * stops training before the optimizer step, so the weights and the last checkpoint are never
 * touched by it. The loops name the step; the CLI prints one line (exit 2).
 */
export class NonFiniteGradientError extends Error {
  override readonly name = 'NonFiniteGradientError';
  constructor(readonly norm: number) {
    super(`clipByGlobalNorm: gradient norm is ${norm} (NaN or Inf in the gradients)`);
  }
}

export class TrainingDivergedError extends UserError {
  override readonly name = 'TrainingDivergedError';
}

/** Runs one update of step `step` (1-based), turning a non-finite gradient into a one-line error naming it. */
export function atStep<T>(step: number, what: string, update: () => T): T {
  try {
    return update();
  } catch (err) {
    if (!(err instanceof NonFiniteGradientError)) throw err;
    throw new TrainingDivergedError(
      `${what} step ${step}: gradient norm is ${err.norm} (NaN or Inf in the loss or the gradients); stopped ` +
        `before the update, the last saved checkpoint is intact (try a lower learning rate)`,
    );
  }
}

/**
 * Before a checkpoint is written: every weight must be finite. A finite gradient can still push
 * weights to Inf (a huge learning rate); such a model is not saved, so the last checkpoint on disk
 * is the last good one. One reduction per variable, read back once per save.
 */
export function assertFiniteWeights(step: number, what: string, vars: readonly tf.Variable[]): void {
  for (const v of vars) {
    const ok = tf.tidy(() => tf.all(tf.isFinite(v)).dataSync()[0]); // [] -> one bool per variable
    if (!ok)
      throw new TrainingDivergedError(
        `${what} step ${step}: weight '${v.name}' became NaN or Inf; not saved, the last saved checkpoint is ` +
          `intact (try a lower learning rate)`,
      );
  }
}
