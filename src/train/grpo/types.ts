import type { AssignOptions } from '../../credit/assign.ts';
import type { CreditedGroup } from '../../credit/credited.ts';
import type { GroupPlan } from '../../credit/plan.ts';
import type { Episode } from '../../data/episode.ts';
import type { CausalLM } from '../../model/causal-lm.ts';
import type { Rng } from '../../random/rng.ts';
import type { Trajectory } from '../../rollout/types.ts';

/**
 * What one GRPO step hands from stage to stage (loop.ts calls them by name, in this order):
 *   rollout        StepRun.rollout           Episode[]             -> RolledOut (G trajectories per question)
 *   plan replays   credit/plan.ts            RolledOut             -> GroupPlan[] (which counterfactuals to replay)
 *   run replays    StepRun.runReplays        GroupPlan[]           -> Trajectory[][] (one replay per planned item)
 *   score          StepRun.scoreLikelihoods  GroupPlan[]           -> number[][] (credit.value likelihood: v_lik)
 *   assign credit  credit/assign.ts          plans, values         -> CreditedGroup[] (each agent's reward)
 *   advantages     advantages.ts             CreditedGroup[]       -> RlSequence[] (each turn with its advantage)
 *   update         update.ts                 RlSequence[]          -> new weights, loss metrics
 * Rollout and run replays are the two stages that use the policy to generate: they run in this
 * process (recipes/stages/step-stages.ts) or as queued jobs on `sharp worker` processes
 * (distributed/stages.ts); everything else runs in the trainer the same way in every mode.
 */

export type { CreditedGroup };

/** The step's seeds: the run RNG (the in-process rollout samples from it) and the step seed drawn from it first. */
export interface StepSeeds {
  /** The step being run, 1-based (it names distributed jobs and policy versions). */
  step: number;
  /** One draw from the run RNG per step: the credit stream's base, and every unit seed (random/step-seeds.ts). */
  stepSeed: number;
  rng: Rng;
}

interface RolloutGroup {
  episode: Episode;
  trajectories: Trajectory[];
}

/** Stage rollout's output: a group per question, in question order. */
export interface RolledOut {
  groups: RolloutGroup[];
  /** Policy calls (decoding steps) and the largest batch, over the step's rollouts. */
  policyCalls: number;
  maxBatch: number;
}

/** The two generating stages of one step, bound to the step's policy and seeds. */
export interface StepRun {
  rollout(episodes: readonly Episode[]): Promise<RolledOut>;
  /**
   * `plans[q].items` replayed with the group's common random numbers; result [q][i] is the replay of plans[q].items[i].
   */
  runReplays(plans: readonly GroupPlan[]): Promise<Trajectory[][]>;
  /**
   * credit.value likelihood: v_lik of every planned context, [q][i] for plans[q].scores[i] ([] for a group of the
   * outcome value). It needs only forward passes of the step's policy, so it runs in the trainer in every mode.
   */
  scoreLikelihoods(plans: readonly GroupPlan[]): Promise<number[][]>;
  /**
   * Judge, agent context and resampler over this step's policy (credit.messageLevel / credit.failurePairs; empty when
   * off).
   */
  assignOptions: AssignOptions;
}

export interface StepStages {
  begin(model: CausalLM, seeds: StepSeeds): Promise<StepRun>;
  /** Releases what the stages hold (a Redis connection); a no-op in process. */
  close(): Promise<void>;
}
