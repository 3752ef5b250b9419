import { describe, expect, it } from 'vitest';
import type { WorkerCall } from './labels.ts';
import { callCounts, creditQuality } from './quality.ts';

const call = (trajectory: number, success: boolean, right: boolean | null, planted = false): WorkerCall => ({
  trajectory,
  trajectoryId: `t${trajectory}`,
  episodeId: `e${trajectory}`,
  delegation: 0,
  success,
  right,
  planted,
  hop: right === null ? null : 0,
  report: 'r',
  reference: right === null ? null : 'g',
});

// Trajectory 0 and 1 failed, 2 and 3 succeeded. Scores are -credit.
const calls = [
  call(0, false, false, true), // credit -1: wrong, planted, blamed
  call(0, false, true), //        credit 0
  call(1, false, false), //       credit 0: wrong, not blamed
  call(1, false, true), //        credit 0.5
  call(2, true, false), //        credit 0.5: wrong, rewarded
  call(2, true, true), //         credit 0
  call(2, true, null), //         credit -1: unjudged, left out everywhere
  call(3, true, true), //         credit -0.5: right, blamed
];
const credits = [-1, 0, 0, 0.5, 0.5, 0, -1, -0.5];
const opts = { reps: 200, seed: 1 };

describe('creditQuality', () => {
  const q = creditQuality(calls, credits, opts);

  it('AUROC of -credit for wrong, per stratum (hand-computed)', () => {
    // Failures: wrong scores 1, 0; right 0, -0.5. Pairs (w, r): (1,0) 1, (1,-0.5) 1, (0,0) 1/2, (0,-0.5) 1 -> 3.5 / 4.
    expect(q.auroc.failure.auroc).toBe(0.875);
    // Successes: wrong -0.5; right 0, 0.5: both above it -> 0.
    expect(q.auroc.success.auroc).toBe(0);
    // Overall: wrong 1, 0, -0.5 against right 0, 0.5, 0, -0.5: 1 beats all four (4); 0 ties two, beats
    // -0.5 (2); -0.5 ties -0.5 (1/2): 6.5 / 12.
    expect(q.auroc.overall.auroc).toBeCloseTo(6.5 / 12, 12);
    expect(
      [q.auroc.failure, q.auroc.success, q.auroc.overall].map((e) => [e.positives, e.negatives, e.clusters]),
    ).toEqual([
      [2, 2, 2],
      [1, 2, 2],
      [3, 4, 4],
    ]);
  });

  it('shares blamed (credit < 0) of wrong, right and planted reports; unjudged calls left out', () => {
    expect(q.blamed.wrong).toEqual({
      failure: { blamed: 1, calls: 2, share: 0.5 },
      success: { blamed: 0, calls: 1, share: 0 },
      overall: { blamed: 1, calls: 3, share: 1 / 3 },
    });
    expect(q.blamed.right).toEqual({
      failure: { blamed: 0, calls: 2, share: 0 },
      success: { blamed: 1, calls: 2, share: 0.5 },
      overall: { blamed: 1, calls: 4, share: 0.25 },
    });
    expect(q.blamed.planted).toEqual({
      failure: { blamed: 1, calls: 1, share: 1 },
      success: { blamed: 0, calls: 0, share: null },
      overall: { blamed: 1, calls: 1, share: 1 },
    });
  });

  it('a stratum with one class has no AUROC (null, no interval)', () => {
    const e = creditQuality(
      calls.slice(0, 4).map((c) => ({ ...c, right: true })),
      [0, 0, 0, 0],
      opts,
    ).auroc.failure;
    expect([e.auroc, e.low, e.high, e.draws]).toEqual([null, null, null, 0]);
  });

  it('refuses credits that do not pair with the calls', () => {
    expect(() => creditQuality(calls, [0], opts)).toThrow('credit quality: 1 credits for 8 calls');
  });
});

describe('callCounts', () => {
  it('counts right, wrong, unjudged and planted calls per stratum', () => {
    expect(callCounts(calls)).toEqual({
      failure: { calls: 4, right: 2, wrong: 2, unjudged: 0, planted: 1 },
      success: { calls: 4, right: 2, wrong: 1, unjudged: 1, planted: 0 },
      overall: { calls: 8, right: 4, wrong: 3, unjudged: 1, planted: 1 },
    });
  });
});
