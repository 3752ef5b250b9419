import { UserError } from '../errors.ts';

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
    throw new TrainingDivergedError(`${what} step ${step}: gradient norm is ${err.norm} (NaN or Inf in the loss or the gradients); stopped before the update, the last saved checkpoint is intact (try a lower learning rate)`);
  }
}
