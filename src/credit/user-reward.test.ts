import { describe, expect, it } from 'vitest';
import type { Episode } from '../data/episode.ts';
import { UserError } from '../errors.ts';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import {
  combinedOutcome,
  defineReward,
  isReward,
  namedRewards,
  probeRewards,
  type RewardInput,
  type RewardSpec,
} from './user-reward.ts';

const episode: Episode = { id: 'q1', question: 'Who founded Acme?', answers: ['Ada Byron', 'Ada'], paragraphs: [] };
const traj = makeTrajectory({
  id: 't1',
  episodeId: 'q1',
  workers: [{ subtask: 'Who founded Acme?', answer: 'Ada Byron' }],
  finalAnswer: 'Ada Byron',
});

/** The one-line UserError of `f`, or a failure when it does not throw one. */
function userErrorOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    return msg;
  }
  throw new Error('expected a UserError');
}

describe('defineReward', () => {
  it('tags the function with a name (its own by default) that another copy of the library recognises', () => {
    const exact = defineReward(({ answer, gold }) => (answer === gold[0] ? 1 : 0));
    expect(isReward(exact)).toBe(true);
    function brevity(): number {
      return 0;
    }
    expect(defineReward(brevity).name).toBe('brevity');
    expect(defineReward(brevity, 'short').name).toBe('short');
    // A structural tag, not a class: a reward made by a second loaded copy of the package still counts.
    expect(isReward({ kind: 'sharp-rl.reward', name: 'x', score: () => 1 })).toBe(true);
    expect(userErrorOf(() => defineReward(3 as never))).toBe('defineReward: expected a function, got 3');
  });
});

describe('combinedOutcome', () => {
  it('passes question, answer, gold, the trajectory and the episode to each reward', () => {
    const seen: RewardInput[] = [];
    const outcome = combinedOutcome(namedRewards([(x: RewardInput) => (seen.push(x), 0.5)]));
    expect(outcome(traj, episode)).toBe(0.5);
    expect(seen[0]).toEqual({
      question: episode.question,
      answer: 'Ada Byron',
      gold: episode.answers,
      trajectory: traj,
      episode,
    });
  });

  it('is the weighted sum of its rewards (TRL reward_funcs x reward_weights)', () => {
    const exact = defineReward(({ answer, gold }) => (answer !== null && gold.includes(answer) ? 1 : 0), 'exact');
    // Tool calls the whole team made: the trajectory, not only the answer.
    const calls = defineReward(({ trajectory }) => trajectory.messages.flatMap((m) => m.toolCalls).length, 'calls');
    const specs: RewardSpec[] = [
      { reward: exact, weight: 2 },
      { reward: calls, weight: -0.25 },
    ];
    // exact = 1, calls = 2 (one delegate, one search): 2 x 1 - 0.25 x 2 = 1.5.
    expect(combinedOutcome(namedRewards(specs))(traj, episode)).toBe(1.5);
    const wrong = { ...traj, finalAnswer: 'Bob' };
    expect(combinedOutcome(namedRewards(specs))(wrong, episode)).toBe(-0.5);
    // Weight 1 by default, and a plain function is a reward too.
    expect(combinedOutcome(namedRewards([exact, () => 0.25]))(traj, episode)).toBe(1.25);
  });

  it.each([
    [
      'NaN',
      () => Number.NaN,
      'reward \'bad\' returned NaN on question q1 (trajectory t1, answer "Ada Byron"); a reward must return a ' +
        'finite number',
    ],
    ['Infinity', () => Number.POSITIVE_INFINITY, "reward 'bad' returned Infinity on question q1"],
    ['a string', () => '1' as unknown as number, 'reward \'bad\' returned a string ("1") on question q1'],
    ['undefined', () => undefined as unknown as number, "reward 'bad' returned undefined on question q1"],
    [
      'a Promise',
      () => Promise.resolve(1) as unknown as number,
      "reward 'bad' returned a Promise (a reward is synchronous",
    ],
    [
      'a throw',
      () => {
        throw new Error('no gold');
      },
      'reward \'bad\' threw on question q1 (trajectory t1, answer "Ada Byron"): no gold',
    ],
  ])('a reward that returns %s is a one-line UserError naming it and the question', (_what, score, message) => {
    const outcome = combinedOutcome(namedRewards([defineReward(score, 'bad')]));
    expect(userErrorOf(() => outcome(traj, episode))).toContain(message);
  });

  it('refuses a weight that is not a finite number and a spec that is not a reward', () => {
    expect(userErrorOf(() => namedRewards([{ reward: () => 1, weight: Number.NaN }]))).toBe(
      'rewards[0]: weight NaN is not a finite number',
    );
    expect(userErrorOf(() => namedRewards([{ reward: () => 1, weight: '2' as unknown as number }]))).toBe(
      'rewards[0]: weight a string ("2") is not a finite number',
    );
    expect(userErrorOf(() => namedRewards(['em' as unknown as RewardSpec]))).toBe(
      'rewards[0]: expected a reward (defineReward(fn)), a function or { reward, weight }, got a string ("em")',
    );
  });
});

describe('probeRewards', () => {
  const episodes: Episode[] = [episode, { ...episode, id: 'q2' }, { ...episode, id: 'q3' }];

  it('asks each reward about a gold answer and no answer for the first questions', () => {
    const asked: (string | null)[] = [];
    probeRewards(
      namedRewards([({ answer, episode: e }: RewardInput) => (asked.push(`${e.id}:${answer}`), 0)]),
      episodes,
    );
    expect(asked).toEqual(['q1:Ada Byron', 'q1:null', 'q2:Ada Byron', 'q2:null']);
  });

  it('fails on the first bad value with the probe in the message', () => {
    const onlyAnswered = defineReward(({ answer }) => {
      if (answer === null) throw new TypeError("Cannot read properties of null (reading 'length')");
      return answer.length;
    }, 'length');
    expect(userErrorOf(() => probeRewards(namedRewards([onlyAnswered]), episodes))).toBe(
      "reward 'length' threw on a probe of question q1 (answer no answer), before training: Cannot read " +
        "properties of null (reading 'length')",
    );
    expect(userErrorOf(() => probeRewards(namedRewards([() => Number.NaN]), episodes))).toContain(
      'returned NaN on a probe of question q1 (answer "Ada Byron"), before training',
    );
  });
});
