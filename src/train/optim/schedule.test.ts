import { describe, it, expect } from 'vitest';
import { learningRateAt } from './schedule.ts';

describe('learningRateAt', () => {
  it('warms up linearly to the peak at step warmup - 1', () => {
    const o = { kind: 'constant' as const, peak: 1e-3, warmupSteps: 4, totalSteps: 100 };
    // (step + 1) / 4 * 1e-3
    expect([0, 1, 2, 3, 4, 50].map((s) => learningRateAt(s, o))).toEqual([2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3, 1e-3]);
  });

  it('decays with a cosine to minLr at totalSteps and stays there', () => {
    const o = { kind: 'cosine' as const, peak: 1, warmupSteps: 2, totalSteps: 10, minLrRatio: 0.1 };
    expect(learningRateAt(2, o)).toBeCloseTo(1, 12); // p = 0
    // p = (6 - 2) / 8 = 0.5: 0.1 + 0.9 * (1 + cos(pi/2)) / 2 = 0.55
    expect(learningRateAt(6, o)).toBeCloseTo(0.55, 12);
    // p = 2/8 = 0.25: 0.1 + 0.9 * (1 + 0.7071068) / 2 = 0.8681981
    expect(learningRateAt(4, o)).toBeCloseTo(0.8681981, 6);
    expect(learningRateAt(10, o)).toBeCloseTo(0.1, 12);
    expect(learningRateAt(15, o)).toBeCloseTo(0.1, 12);
  });

  it('rejects a negative step', () => {
    expect(() => learningRateAt(-1, { kind: 'constant', peak: 1, warmupSteps: 0, totalSteps: 1 })).toThrow('non-negative integer');
  });
});
