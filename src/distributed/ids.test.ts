import { describe, expect, it } from 'vitest';
import { fnv1a32 } from '../random/hash.ts';
import { groupJobId, policyVersion, replayJobId, runIdOf } from './ids.ts';
import { creditSeed, groupSeed, replaySeed } from '../random/step-seeds.ts';

describe('job ids and seeds', () => {
  it('are functions of run, step, question and trajectory only, without the ":" BullMQ reserves', () => {
    const id = groupJobId(runIdOf('quick:start-20260101 1200'), 3, 1);
    expect(id).toBe('quick_start-20260101_1200.s3.q1');
    expect(replayJobId(id, 0)).toBe('quick_start-20260101_1200.s3.q1.t0');
    expect(policyVersion(3)).toBe('v3');
    expect(groupSeed(42, 1)).toBe(fnv1a32('group/42/1') | 0);
    expect(groupSeed(42, 1)).toBe(groupSeed(42, 1));
    expect(
      new Set([
        groupSeed(42, 0),
        groupSeed(42, 1),
        groupSeed(43, 0),
        replaySeed(groupSeed(42, 0), 0),
        creditSeed(groupSeed(42, 0)),
      ]).size,
    ).toBe(5);
  });
});
