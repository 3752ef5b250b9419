import { fnv1a32 } from '../random/hash.ts';

/**
 * Job ids and seeds of the distributed collect. Both are functions of (run, step, question, group /
 * trajectory) alone, so a retried, duplicated or re-enqueued job has the same id (BullMQ adds a job
 * whose id exists as a no-op: it runs and counts once) and draws the same numbers wherever it runs.
 * BullMQ job ids may not contain ':' (its key separator), hence the dots.
 */

/** Run id from the run folder's name: only characters that are safe in a job id and a path. */
export function runIdOf(runDirName: string): string {
  return runDirName.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** The group job of question `q` (0-based, batch order) of step `step` (1-based). */
export function groupJobId(run: string, step: number, q: number): string {
  return `${run}.s${step}.q${q}`;
}

/** The replay job of trajectory `t` (index in its group) under a group job. */
export function replayJobId(groupId: string, t: number): string {
  return `${groupId}.t${t}`;
}

/** Policy version of step `step`: the weights after step - 1 updates. */
export function policyVersion(step: number): string {
  return `v${step}`;
}

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
