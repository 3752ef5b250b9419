import type { CausalLM } from '../../model/causal-lm.ts';
import type { GradientAccumulator } from '../optim/accumulate.ts';
import type { AdamW } from '../optim/adamw.ts';
import { clipAndStep } from '../optim/clip.ts';
import { accumulateDpo, dpoMetrics, preparePairs, type DpoConfig } from '../losses/dpo-loss.ts';
import type { PairSequences } from '../batches/sequences.ts';

/**
 * One DPO-only update (`sharp dpo`) on preference pairs (losses/dpo-loss.ts), against a frozen
 * reference when one is held, else the policy before this update.
 */
export interface DpoUpdateContext {
  model: CausalLM;
  /** Frozen reference; absent: the policy before this update. */
  ref?: CausalLM;
  optimizer: AdamW;
  accumulator: GradientAccumulator;
  lr: number;
  padId: number;
}

/** One DPO-only update: reference log-probs, accumulate, clip, AdamW; its metrics under `dpo/*`. */
export function dpoUpdate(
  ctx: DpoUpdateContext,
  pairs: readonly PairSequences[],
  cfg: DpoConfig & { gradClip: number },
): Record<string, number> {
  if (pairs.length === 0) throw new Error('dpoUpdate: no preference pairs');
  const prep = preparePairs(ctx.ref ?? ctx.model, pairs, cfg.microBatch, ctx.padId);
  ctx.accumulator.reset();
  accumulateDpo(ctx.accumulator, ctx.model, prep, cfg, ctx.padId);
  const step = ctx.accumulator.finish();
  const gradNorm = clipAndStep(ctx.accumulator, ctx.optimizer, ctx.lr, cfg.gradClip);
  return {
    ...dpoMetrics(step.stats, step.tags),
    'dpo/loss': step.loss,
    'dpo/gradNorm': gradNorm,
    'dpo/microBatches': step.microBatches,
  };
}
