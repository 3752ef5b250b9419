/**
 * How a trajectory run obtains its messages: generated fresh (no plan), or, in replays (replay.ts),
 * partly fixed by a recorded trajectory. The engine asks the plan per planner turn and per delegation.
 */
import type { AgentRecord, Message } from './types.ts';

/**
 * One assistant message taken from a record:
 * - copy: used verbatim (no policy call): kept prefixes of `final` / `replan` replays;
 * - force: regenerated under the recorded sampling choices: the policy gets `forcedTokens` (it
 *   recomputes the logprobs); a record without token ids (scripted policy) is re-used as text.
 */
export type Forcing = { kind: 'copy' | 'force'; message: Message };

/** What delegation k (0-based, in order) of a run does. */
export type DelegationPlan =
  /**
   * Run a worker; `workerTurn` may force its turns (exact replay); `subtask` replaces the one the
   * planner wrote (a repaired delegation: the gold sub-question).
   */
  | { kind: 'run'; workerTurn?: (turn: number) => Forcing | undefined; subtask?: string }
  /** No worker runs: the planner gets `report`; `copy` puts the recorded worker into the record. */
  | { kind: 'fixed'; report: string; masked: boolean; copy?: { agent: AgentRecord; messages: Message[] } };

export interface TrajectoryPlan {
  plannerTurn(turn: number): Forcing | undefined;
  /**
   * Delegation k with the subtask the planner wrote for it in this run (a replanned one may differ from the record).
   */
  delegation(k: number, subtask: string): DelegationPlan;
}

/** A fresh rollout: everything generated, every delegation runs a worker. */
export const FRESH_PLAN: TrajectoryPlan = {
  plannerTurn: () => undefined,
  delegation: () => ({ kind: 'run' }),
};
