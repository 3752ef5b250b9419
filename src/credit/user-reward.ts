/**
 * User rewards: the outcome reward R(tau) written by the user, in place of the accuracy of
 * credit.success (docs/extending.md, "Your own reward"). One or several, each with a weight, summed
 * as TRL sums its `reward_funcs` times `reward_weights`. The credit module decomposes the sum
 * exactly as it decomposes accuracy (outcome.ts): the recorded trajectory's value is the broadcast
 * reward R_b, and every leave-one-out or Shapley replay is scored whole by the same function.
 *
 * A reward is the user's code running inside the training loop, so every value it returns is
 * checked: a throw, NaN, an infinity or a non-number is a one-line UserError naming the reward and
 * the question, never a NaN advantage three stages later. `probeRewards` runs the same checks on
 * made-up trajectories of real questions before anything trains, so a reward that cannot work
 * stops the run before its first step.
 */
import type { Episode } from '../data/episode.ts';
import { UserError } from '../errors.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { OutcomeFn } from './outcome.ts';

/** What a reward sees of one trajectory, recorded or replayed. */
export interface RewardInput {
  /** The question asked (episode.question). */
  question: string;
  /** The planner's final answer; null when it never answered. */
  answer: string | null;
  /** The gold answer first, then its aliases (episode.answers). */
  gold: readonly string[];
  /** The whole trajectory: every agent's messages, tool calls and reports. */
  trajectory: Trajectory;
  /** The question's record: id, paragraphs, gold decomposition where the data has one. */
  episode: Episode;
}

/** A reward: a finite number for one trajectory; synchronous, so that replays are scored in one pass. */
export type RewardFunction = (input: RewardInput) => number;

/** The tag `defineReward` puts on its result: a string, so that a reward made by another copy of the library counts. */
const REWARD_KIND = 'sharp-rl.reward';

export interface Reward {
  readonly kind: typeof REWARD_KIND;
  /** Named in every error and log line about the reward. */
  readonly name: string;
  readonly score: RewardFunction;
}

/** A reward with its weight in the sum (default 1). */
export interface WeightedReward {
  reward: Reward | RewardFunction;
  weight?: number;
}

/** What `train(config, { rewards })` accepts: rewards, plain functions, or either with a weight. */
export type RewardSpec = Reward | RewardFunction | WeightedReward;

/** A reward ready to score: its name, weight and function. */
export interface NamedReward {
  name: string;
  weight: number;
  score: RewardFunction;
}

/** Marks `score` as an outcome reward; `name` defaults to the function's own name. */
export function defineReward(score: RewardFunction, name?: string): Reward {
  if (typeof score !== 'function') throw new UserError(`defineReward: expected a function, got ${describe(score)}`);
  const n = name ?? (score.name || 'reward');
  return { kind: REWARD_KIND, name: n, score };
}

export function isReward(x: unknown): x is Reward {
  return (
    typeof x === 'object' &&
    x !== null &&
    (x as Reward).kind === REWARD_KIND &&
    typeof (x as Reward).score === 'function' &&
    typeof (x as Reward).name === 'string'
  );
}

/** A value as an error message shows it: the type, and short values themselves. */
function describe(x: unknown): string {
  if (typeof x === 'string') return `a string (${JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}...` : x)})`;
  if (typeof x === 'number') return String(x);
  if (x === null) return 'null';
  if (x instanceof Promise) return 'a Promise (a reward is synchronous: await outside it)';
  return typeof x === 'object' ? (Array.isArray(x) ? 'an array' : 'an object') : typeof x;
}

/**
 * One reward as a NamedReward: `where` names it in errors (`rewards[1]`, `credit.rewards[0] (./r.ts)`).
 * A weight must be a finite number: an infinite one makes every sum infinite.
 */
export function namedReward(spec: unknown, where: string): NamedReward {
  let reward: unknown = spec;
  let weight: unknown = 1;
  if (typeof spec === 'object' && spec !== null && !isReward(spec) && 'reward' in spec) {
    reward = (spec as WeightedReward).reward;
    weight = (spec as WeightedReward).weight ?? 1;
  }
  if (typeof weight !== 'number' || !Number.isFinite(weight))
    throw new UserError(`${where}: weight ${describe(weight)} is not a finite number`);
  if (isReward(reward)) return { name: reward.name, weight, score: reward.score };
  if (typeof reward === 'function')
    return { name: (reward as RewardFunction).name || where, weight, score: reward as RewardFunction };
  throw new UserError(
    `${where}: expected a reward (defineReward(fn)), a function or { reward, weight }, got ${describe(reward)}`,
  );
}

/** The rewards of the API's `rewards` option, in order. */
export function namedRewards(specs: readonly RewardSpec[], where = 'rewards'): NamedReward[] {
  if (!Array.isArray(specs)) throw new UserError(`${where}: expected a list of rewards, got ${describe(specs)}`);
  return specs.map((s, i) => namedReward(s, `${where}[${i}]`));
}

const quote = (a: string | null): string => (a === null ? 'no answer' : JSON.stringify(a));

/** One reward's value of one trajectory, checked: anything but a finite number is a UserError saying where. */
function scoreChecked(r: NamedReward, input: RewardInput, on: string): number {
  let v: unknown;
  try {
    v = r.score(input);
  } catch (err) {
    throw new UserError(`reward '${r.name}' threw ${on}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new UserError(`reward '${r.name}' returned ${describe(v)} ${on}; a reward must return a finite number`);
  return v;
}

function inputOf(trajectory: Trajectory, episode: Episode): RewardInput {
  return { question: episode.question, answer: trajectory.finalAnswer, gold: episode.answers, trajectory, episode };
}

/** The weighted sum of the rewards as the credit module's outcome reward, every value checked. */
export function combinedOutcome(rewards: readonly NamedReward[]): OutcomeFn {
  if (rewards.length === 0) throw new Error('combinedOutcome: no rewards');
  return (trajectory, episode) => {
    const input = inputOf(trajectory, episode);
    const on = `on question ${episode.id} (trajectory ${trajectory.id}, answer ${quote(trajectory.finalAnswer)})`;
    return rewards.reduce((sum, r) => sum + r.weight * scoreChecked(r, input, on), 0);
  };
}

/** A planner that answered `answer` at once: the smallest trajectory a reward can be asked about. */
function probeTrajectory(episode: Episode, answer: string | null, tag: string): Trajectory {
  const msg = (index: number, chatRole: 'user' | 'assistant', text: string) => ({
    index,
    agent: 0,
    role: 'planner' as const,
    chatRole,
    text,
    tokenIds: [],
    logprobs: [],
    toolCalls: [],
  });
  return {
    id: `probe-${tag}-${episode.id}`,
    episodeId: episode.id,
    sample: 0,
    messages: [
      msg(0, 'user', episode.question),
      msg(1, 'assistant', answer === null ? 'I do not know.' : `<answer>${answer}</answer>`),
    ],
    agents: [{ id: 0, role: 'planner', delegation: null, answer, endReason: answer === null ? 'no_action' : 'answer' }],
    finalAnswer: answer,
  };
}

/**
 * Each reward on made-up trajectories of the first `n` questions, one answering the gold answer and
 * one never answering, before anything trains: a reward that throws or returns something other than
 * a finite number fails here with the same one line it would give at step 1.
 */
export function probeRewards(rewards: readonly NamedReward[], episodes: readonly Episode[], n = 2): void {
  for (const episode of episodes.slice(0, n)) {
    for (const [tag, answer] of [
      ['gold', episode.answers[0] ?? ''],
      ['none', null],
    ] as const) {
      const trajectory = probeTrajectory(episode, answer, tag);
      const on = `on a probe of question ${episode.id} (answer ${quote(answer)}), before training`;
      for (const r of rewards) scoreChecked(r, inputOf(trajectory, episode), on);
    }
  }
}
