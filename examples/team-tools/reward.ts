/**
 * The example's outcome rewards, in place of the library's exact-match accuracy. `main.ts` passes
 * them to `train` with weights (the TRL `reward_funcs` + `reward_weights` pattern); the credit
 * module then splits their weighted sum between the planner and its workers by leave-one-out
 * replays, each replay scored by these same functions.
 *
 * A reward gets { question, answer, gold, trajectory, episode } and returns a finite number; it is
 * synchronous. Anything else (NaN, a string, a throw) stops the run with one line naming the reward.
 */
import { defineReward } from 'sharp-rl';

/** Lower case, punctuation dropped, single spaces: "Zhike." and "zhike" are the same answer. */
function normalise(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N} ]+/gu, ' ')
    .split(' ')
    .filter((w) => w !== '')
    .join(' ');
}

/** 1 when the team's final answer is the gold answer or one of its aliases, else 0. */
export const correct = defineReward(
  ({ answer, gold }) => (answer !== null && gold.some((g) => normalise(g) === normalise(answer)) ? 1 : 0),
  'correct',
);

/**
 * 1 when the final answer occurs in a search result one of the workers read: the team answered
 * from its evidence rather than from a guess. It reads the trajectory, so in a leave-one-out replay
 * it sees what that replay's team read.
 */
export const grounded = defineReward(({ answer, trajectory }) => {
  const said = answer === null ? '' : normalise(answer);
  if (said === '') return 0;
  const results = trajectory.messages
    .flatMap((m) => m.toolCalls)
    .filter((c) => c.name === 'search' && c.valid)
    .map((c) => ` ${normalise(c.result ?? '')} `);
  return results.some((r) => r.includes(` ${said} `)) ? 1 : 0;
}, 'grounded');
