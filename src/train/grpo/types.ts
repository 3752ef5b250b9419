import type { CreditedGroup } from '../../credit/credited.ts';
import type { PreferencePair } from '../../credit/first-error.ts';
import type { StepRecord } from '../../credit/record.ts';

/**
 * What one GRPO step hands from stage to stage (loop.ts sequences them):
 *   collect (collect.ts)  -> Collected: per question a CreditedGroup (G trajectories, each with its
 *                            agents' credit attached: credit/credited.ts)
 *   batch (rl-batch.ts)   -> RlSequence[] (batches/sequences.ts): each generated turn in its
 *                            context with its agent's advantage and where it came from
 *   update (update.ts)    <- TrainSequence[]: what the loss needs of a sequence (an RlSequence is one)
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

/**
 * One agent's generated text in its context: ids = context + generated tokens; trainMask marks the
 * generated tokens (prompt, chat-template and tool-result tokens are 0), and every trained token
 * carries the agent's advantage A(i, m).
 */
export interface TrainSequence {
  /** Token ids: context then generated tokens. */
  ids: number[];
  /** 1 where ids[t] is a generated (trained) token, else 0; same length as ids; trainMask[0] must be 0. */
  trainMask: number[];
  /** Sampling log-prob of ids[t] where trainMask[t] = 1 (0 elsewhere); used when oldLogp = 'sampling'. */
  sampleLogp?: number[];
  /** Advantage of the agent that generated the tokens. */
  adv: number;
  /**
   * Per-token advantages (same length as ids; read where trainMask > 0), when the agent's messages
   * carry advantages of their own (credit.messageLevel); otherwise every trained token gets `adv`.
   */
  tokenAdv?: number[];
}
