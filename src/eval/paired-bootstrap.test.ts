import { describe, expect, it } from 'vitest';
import { MDE_FACTOR, pairedDifference, pairedRatioDifference } from './paired-bootstrap.ts';

const opts = { reps: 20_000, seed: 7 };

describe('pairedDifference (hand-built tables of outcomes)', () => {
  it('identical arms: difference 0, interval [0, 0], nothing detectable, not resolved', () => {
    const t = [
      [1, 0, 0.5, 0.25],
      [0, 1, 0.75, 0],
    ];
    expect(pairedDifference(t, t, opts)).toEqual({
      mean: 0,
      low: 0,
      high: 0,
      se: 0,
      mde: 0,
      seeds: 2,
      questions: 4,
      resolved: false,
    });
  });

  it('a constant shift is resolved exactly, however few the questions', () => {
    const b = [[0, 0.25, 0.5]];
    const a = [[0.25, 0.5, 0.75]];
    const r = pairedDifference(a, b, opts);
    expect(r.mean).toBeCloseTo(0.25, 12);
    expect(r.low).toBeCloseTo(0.25, 12);
    expect(r.high).toBeCloseTo(0.25, 12);
    expect(r.resolved).toBe(true);
  });

  it('one seed, d = (1, 0, 0, 0): the bootstrap mean is Binomial(4, 1/4) / 4', () => {
    // Resampling 4 questions with replacement: mean = X / 4, X ~ Binomial(4, 1/4).
    // SE = sqrt(p (1 - p) / 4) = sqrt(0.1875 / 4) = 0.21651; P(X = 0) = 0.316 > 2.5% -> low 0;
    // P(X <= 2) = 0.949 < 97.5% <= P(X <= 3) = 0.996 -> high 3/4.
    const r = pairedDifference([[1, 0, 0, 0]], [[0, 0, 0, 0]], opts);
    expect(r.mean).toBe(0.25);
    expect(r.se).toBeCloseTo(0.21651, 2);
    expect(r.low).toBe(0);
    expect(r.high).toBe(0.75);
    expect(r.mde).toBeCloseTo(MDE_FACTOR * r.se, 12);
    expect(MDE_FACTOR).toBeCloseTo(2.8016, 4);
    expect(r.resolved).toBe(false);
  });

  it('seeds are resampled too: two seeds that disagree leave the sign open', () => {
    // d = 1 in seed 0 and 0 in seed 1 for every question: the mean over 2 resampled seeds is 0, 1/2 or 1
    // with probabilities 1/4, 1/2, 1/4: SE = sqrt(1/8) = 0.35355, interval [0, 1].
    const r = pairedDifference(
      [
        [1, 1],
        [0, 0],
      ],
      [
        [0, 0],
        [0, 0],
      ],
      opts,
    );
    expect(r.mean).toBe(0.5);
    expect(r.se).toBeCloseTo(0.35355, 2);
    expect([r.low, r.high]).toEqual([0, 1]);
    expect(r.resolved).toBe(false);
  });

  it('is reproducible from its seed and refuses tables that do not pair', () => {
    const a = [[1, 0, 1, 1, 0, 1]];
    const b = [[0, 0, 1, 0, 0, 1]];
    expect(pairedDifference(a, b, opts)).toEqual(pairedDifference(a, b, opts));
    expect(() => pairedDifference(a, [], opts)).toThrow(/1 and 0 seeds do not pair/);
    expect(() => pairedDifference([[1, 0]], [[1]], opts)).toThrow(/seed 0 has 2 and 1 questions, not 2/);
    expect(() => pairedDifference([[]], [[]], opts)).toThrow(/no questions/);
  });
});

describe('pairedRatioDifference (shares of worker calls, hand-built)', () => {
  const c = (num: number, den: number) => ({ num, den });

  it('is a ratio of sums, not a mean of ratios', () => {
    // A: 1 of 1 calls on question 0, 0 of 3 on question 1: 1/4 of all calls (a mean of ratios would say 1/2).
    const r = pairedRatioDifference([[c(1, 1), c(0, 3)]], [[c(0, 1), c(0, 3)]], opts);
    expect(r.mean).toBe(0.25);
    // Resampling 2 questions: draws {q0,q0} 1, {q0,q1} x2 1/4, {q1,q1} 0 -> 2.5% quantile 0, 97.5% quantile 1.
    expect(r.low).toBe(0);
    expect(r.high).toBe(1);
    expect(r.resolved).toBe(false);
  });

  it('the same share in every cell is resolved exactly', () => {
    const a = [
      [c(1, 2), c(2, 4), c(3, 6)],
      [c(2, 4), c(1, 2), c(1, 2)],
    ];
    const b = a.map((row) => row.map((x) => c(0, x.den)));
    const r = pairedRatioDifference(a, b, opts);
    expect(r).toMatchObject({ mean: 0.5, low: 0.5, high: 0.5, se: 0, mde: 0, seeds: 2, questions: 3, resolved: true });
  });

  it('a draw with no calls at all counts as a share of 0, and tables that do not pair are refused', () => {
    const r = pairedRatioDifference([[c(0, 0), c(1, 1)]], [[c(0, 0), c(0, 1)]], opts);
    expect(r.mean).toBe(1);
    expect(r.low).toBe(0);
    expect(() => pairedRatioDifference([[c(0, 1)]], [[c(0, 1)], [c(0, 1)]], opts)).toThrow('2 seeds do not pair');
  });
});
