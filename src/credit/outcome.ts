import type { Episode } from '../data/episode.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { CreditConfig } from './config.ts';
import { type SuccessFn, successFunction } from './success.ts';

/**
 * The outcome reward R(tau) the credit module decomposes: of the recorded trajectory it is the
 * broadcast reward R_b, of each replay the value that v(S) averages. It sees the whole trajectory
 * and its episode, not only the final answer and the gold list, so that a user reward
 * (user-reward.ts) can score what a replay did as well as what it answered. Without user rewards it
 * is the accuracy of `credit.success`.
 */
export type OutcomeFn = (trajectory: Trajectory, episode: Episode) => number;

/** The accuracy reward: the success function of the final answer against the gold answers. */
export function accuracyOutcome(success: SuccessFn): OutcomeFn {
  return (trajectory, episode) => success(trajectory.finalAnswer, episode.answers);
}

/** The outcome reward of a run: the user's when given (already checked and weighted), else `credit.success`. */
export function outcomeFunction(cfg: CreditConfig, user?: OutcomeFn): OutcomeFn {
  return user ?? accuracyOutcome(successFunction(cfg.success, { f1Threshold: cfg.f1Threshold }));
}

/**
 * The share of trajectories whose final answer is right by credit.success. With a user reward the
 * broadcast reward is no longer 0 or 1, so the `accuracy` metric is measured here instead of read
 * off R_b > 0.
 */
export function answerAccuracy(
  groups: readonly { episode: Episode; trajectories: readonly Trajectory[] }[],
  cfg: CreditConfig,
): number {
  const right = accuracyOutcome(successFunction(cfg.success, { f1Threshold: cfg.f1Threshold }));
  const scores = groups.flatMap((g) => g.trajectories.map((t) => (right(t, g.episode) > 0 ? 1 : 0)));
  return scores.length === 0 ? Number.NaN : scores.reduce<number>((a, x) => a + x, 0) / scores.length;
}
