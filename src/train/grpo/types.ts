import type { CreditedGroup } from '../../credit/credited.ts';
import type { PreferencePair } from '../../credit/first-error.ts';
import type { StepRecord } from '../../credit/record.ts';

/**
 * What one GRPO step hands from stage to stage (loop.ts sequences them):
 *   collect (collect.ts)        -> Collected: per question a CreditedGroup (G trajectories, each
 *                                  with its agents' credit attached: credit/credited.ts)
 *   batch (advantages.ts)       -> RlSequence[] (batches/sequences.ts): each generated turn in its
 *                                  context with its agent's advantage and where it came from
 *   update (update.ts)          <- RlSequence[]
 */

export type { CreditedGroup };

/** What the loop tells the collect stage besides the batch: the step being collected (1-based). */
export interface CollectContext {
  step: number;
}

/** What the collect stage returns for one step. */
export interface Collected {
  groups: CreditedGroup[];
  /** Failure-path preference pairs (credit.failurePairs), mixed in with train.dpoWeight. */
  pairs?: PreferencePair[];
  /** Extra metrics of the collect stage (credit report, rollout stats), namespaced. */
  metrics?: Record<string, number>;
  /** A sample of the step's trajectories with their credit, written for `sharp view` (its step is set in loop.ts). */
  record?: StepRecord;
}
