import type { Trajectory } from '../rollout/types.ts';
import type { Coalition } from './coalitions.ts';
import type { FirstError } from './first-error.ts';
import type { MessageReward } from './message-shares.ts';
import type { DelegationReference } from './references.ts';
import type { TrajectoryCreditSummary } from './report.ts';
import type { AgentCredit } from './reward.ts';

/**
 * What the credit stages hand the trainer: each trajectory with its agents' credit attached (reward
 * parts and total, one per agent, indexed by agent id), the numbers behind it, and, with
 * credit.messageLevel, the signed share of each judged message. Advantages and training sequences
 * are built from it directly (train/grpo/advantages.ts, train/batches/sequences.ts); it crosses the
 * distributed jobs as it is (plain JSON).
 */
export interface CreditedTrajectory {
  trajectory: Trajectory;
  /** agents[i] is the credit of trajectory.agents[i]. */
  agents: AgentCredit[];
  /** How the credit was reached: outcome, replay values, marginals. */
  credit: TrajectoryCredit;
  /** credit.messageLevel: the shares of this trajectory's messages (absent without message-level credit). */
  messages?: MessageReward[];
}

/** The numbers behind one trajectory's credit (plain JSON: values as [coalition, v(S)] pairs). */
export interface TrajectoryCredit extends TrajectoryCreditSummary {
  /** R(tau), the recorded outcome: the broadcast reward. */
  success: number;
  /** Replay noise floor of this trajectory (ValueTable.noise; 0 when nothing was replayed). */
  noise: number;
  k: number;
  /** Shapley values per worker (method shapley). */
  phi?: number[];
  /** R_mc per worker (by delegation) and of the planner. */
  workerMarginal: number[];
  plannerMarginal: number;
  /** v(S) of every replayed coalition (credit.value likelihood: v_lik(S) in nats). */
  values: [Coalition, number][];
  /** The likelihood value's sequential form: v_lik after j reports were read, j = 0..K (nats). */
  readThrough?: number[];
  /**
   * Counterfactual repair: v(N) - v(N with delegation d's subtask repaired), for each delegation the judge found wrong.
   */
  plannerRepairs?: [number, number][];
  firstError?: FirstError;
  /**
   * Counterfactual repair and the oracle: what the gold decomposition says of each delegation (the reference reports).
   */
  references?: DelegationReference[];
}

/** The G credited trajectories of one question (a GRPO group). */
export interface CreditedGroup {
  trajectories: readonly CreditedTrajectory[];
}

/** The run report's inputs of credited trajectories (report.ts creditReport). */
export function reportInputs(credited: readonly CreditedTrajectory[]): {
  summaries: TrajectoryCredit[];
  credits: AgentCredit[];
} {
  return { summaries: credited.map((c) => c.credit), credits: credited.flatMap((c) => c.agents) };
}
