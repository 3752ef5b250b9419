/**
 * The seeds of one RL step's units of work, functions of the step's seed (one draw from the run RNG)
 * and the position of the unit alone: a group's rollout, one trajectory's replays and a group's
 * credit plan draw the same numbers wherever they run (this process, or a `sharp worker`), so a
 * retried or duplicated job gives the same result.
 */
import { fnv1a32 } from './hash.ts';

/** Seed of a group: the step's seed (one draw from the run RNG) and the question index. */
export function groupSeed(stepSeed: number, q: number): number {
  return fnv1a32(`group/${stepSeed}/${q}`) | 0;
}

/** Seed of the counterfactual replays of trajectory `t` of a group. */
export function replaySeed(seedOfGroup: number, t: number): number {
  return fnv1a32(`replay/${seedOfGroup}/${t}`) | 0;
}

/** Seed of the credit stage of a group (Shapley permutation sampling). */
export function creditSeed(seedOfGroup: number): number {
  return fnv1a32(`credit/${seedOfGroup}`) | 0;
}
