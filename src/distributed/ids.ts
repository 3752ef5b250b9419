/**
 * Job ids of the distributed stages (their seeds: random/step-seeds.ts). Both are functions of (run, step, question,
 * group / trajectory) alone, so a retried, duplicated or re-enqueued job has the same id (BullMQ adds a job
 * whose id exists as a no-op: it runs and counts once) and draws the same numbers wherever it runs.
 * BullMQ job ids may not contain ':' (its key separator), hence the dots.
 */

/** Run id from the run folder's name: only characters that are safe in a job id and a path. */
export function runIdOf(runDirName: string): string {
  return runDirName.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** The rollout job of question `q` (0-based, batch order) of step `step` (1-based). */
export function groupJobId(run: string, step: number, q: number): string {
  return `${run}.s${step}.q${q}`;
}

/** The replay job of trajectory `t` (index in its group) of a group. */
export function replayJobId(groupId: string, t: number): string {
  return `${groupId}.t${t}`;
}

/** Policy version of step `step`: the weights after step - 1 updates. */
export function policyVersion(step: number): string {
  return `v${step}`;
}
