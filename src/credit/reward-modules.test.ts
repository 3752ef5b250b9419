import { describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { errorOf } from '../../test/one-line-error.ts';
import { userOutcome, userRewards } from './reward-modules.ts';
import { defineReward } from './user-reward.ts';

const dir = 'test/fixtures/rewards';
const episode: Episode = { id: 'q', question: 'Who?', answers: ['Ada Byron'], paragraphs: [] };
const right = { ...makeTrajectory({ id: 'r', workers: [], finalAnswer: 'Ada Byron' }), episodeId: 'q' };
const none = { ...makeTrajectory({ id: 'n', workers: [], finalAnswer: null }), episodeId: 'q' };
const credit = (rewards: unknown) => creditSection.parse({ rewards });

describe('userRewards', () => {
  it('none anywhere: the accuracy reward (no user outcome)', async () => {
    const rewards = await userRewards(credit([]));
    expect(rewards).toEqual([]);
    expect(userOutcome(rewards)).toBeUndefined();
  });

  it('loads credit.rewards modules by path: defineReward, plain and default exports, with weights', async () => {
    const rewards = await userRewards(
      credit([
        { module: `${dir}/rewards.ts`, export: 'exact', weight: 2 },
        { module: `${dir}/rewards.ts`, export: 'words', weight: -0.5 },
        { module: `./${dir}/rewards.ts` },
      ]),
    );
    expect(rewards.map((r) => [r.name, r.weight])).toEqual([
      ['exact', 2],
      ['rewards.ts#words', -0.5],
      ['rewards.ts#default', 1],
    ]);
    const outcome = userOutcome(rewards);
    // right: 2 x 1 - 0.5 x 2 + 0 = 1; no answer: 0 - 0 - 1 = -1.
    expect(outcome?.(right, episode)).toBe(1);
    expect(outcome?.(none, episode)).toBe(-1);
  });

  it('takes the API rewards when the config names none', async () => {
    const rewards = await userRewards(credit([]), [defineReward(() => 0.5, 'half')]);
    expect(rewards.map((r) => r.name)).toEqual(['half']);
  });

  it.each([
    [
      [{ module: `${dir}/missing.ts` }],
      /^credit\.rewards\[0\] \(test\/fixtures\/rewards\/missing\.ts\): no such file \//,
    ],
    [
      [{ module: `${dir}/rewards.ts`, export: 'exactt' }],
      /: no export 'exactt' \(it exports .*exact.*\); set credit\.rewards\[\]\.export$/,
    ],
    [
      [{ module: `${dir}/rewards.ts`, export: 'notAReward' }],
      /: expected a reward \(defineReward\(fn\)\), a function or \{ reward, weight \}, got a string \("em"\)$/,
    ],
    [[{ module: `${dir}/broken.ts` }], /: cannot load the module: reward module exploded$/],
  ])('a bad entry is a one-line error naming it: %j', async (entries, message) => {
    expect(await errorOf(userRewards(credit(entries)))).toMatch(message);
  });

  it('refuses rewards in both the config and the API', async () => {
    expect(await errorOf(userRewards(credit([{ module: `${dir}/rewards.ts` }]), [() => 1]))).toBe(
      'rewards: given both in the config (credit.rewards) and to train({ rewards }); name them in one place',
    );
  });

  it('the config checks the entries: an infinite weight, an unknown key, too many', () => {
    expect(creditSection.safeParse({ rewards: [{ module: 'r.ts', weight: Number.POSITIVE_INFINITY }] }).success).toBe(
      false,
    );
    expect(creditSection.safeParse({ rewards: [{ module: 'r.ts', wieght: 1 }] }).success).toBe(false);
    expect(creditSection.safeParse({ rewards: Array.from({ length: 17 }, () => ({ module: 'r.ts' })) }).success).toBe(
      false,
    );
  });
});
