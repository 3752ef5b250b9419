import { describe, it, expect } from 'vitest';
import { looCredit, looDeltas, plannerCredit } from './loo.ts';

describe('SHARP leave-one-out', () => {
  it('Delta_m = R(full) - R(without m)', () => {
    // success 1; masking w0 or w1 fails, masking w2 still succeeds -> [1, 1, 0]
    expect(looDeltas(1, [0, 0, 1])).toEqual([1, 1, 0]);
    // failure 0; masking the saboteur w1 succeeds -> Delta = 0 - 1 = -1
    expect(looDeltas(0, [0, 1])).toEqual([0, -1]);
  });
  it('planner = mean over workers of max(Delta, 0)', () => {
    // (1 + 1 + 0) / 3
    expect(looCredit(1, [0, 0, 1]).planner).toBeCloseTo(2 / 3, 15);
    // (0 + max(-1, 0)) / 2 = 0: harmful reports are not the planner's blame
    expect(plannerCredit([0, -1])).toBe(0);
    // averaged replays give fractional deltas: (0.5 + 0.25 + 0) / 3
    expect(plannerCredit([0.5, 0.25, -0.75])).toBeCloseTo(0.25, 15);
    expect(plannerCredit([])).toBe(0);
  });
});
