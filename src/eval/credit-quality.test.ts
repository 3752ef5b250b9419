import { describe, expect, it } from 'vitest';
import { Rng } from '../random/rng.ts';
import { auroc, blamedShare, clusteredAuroc, type Scored } from './credit-quality.ts';

const P = (score: number): Scored => ({ score, positive: true });
const N = (score: number): Scored => ({ score, positive: false });

/** The definition, pair by pair: P(positive > negative) + P(tie) / 2 (an independent reference). */
function pairwiseAuroc(items: readonly Scored[]): number | null {
  const pos = items.filter((i) => i.positive);
  const neg = items.filter((i) => !i.positive);
  if (pos.length === 0 || neg.length === 0) return null;
  let wins = 0;
  for (const p of pos) for (const n of neg) wins += p.score > n.score ? 1 : p.score === n.score ? 0.5 : 0;
  return wins / (pos.length * neg.length);
}

describe('auroc', () => {
  it('a hand-computed table with a tie', () => {
    // Positives 3, 2, 1; negatives 2, 0. Pairs (p, n): (3,2) 1, (3,0) 1, (2,2) 1/2, (2,0) 1, (1,2) 0,
    // (1,0) 1: 4.5 of 6 = 0.75. By mid-ranks: 0 N r1, 1 P r2, 2 P / 2 N r3.5, 3 P r5; R+ = 10.5,
    // (10.5 - 3 * 4 / 2) / (3 * 2) = 0.75.
    expect(auroc([P(3), P(2), P(1), N(2), N(0)])).toBe(0.75);
  });

  it('1 when every positive ranks above every negative, 0 when below, 1/2 when all tie', () => {
    expect(auroc([N(-1), P(0.5), N(0), P(2)])).toBe(1);
    expect(auroc([P(-1), N(0.5), P(0), N(2)])).toBe(0);
    expect(auroc([P(0), N(0), N(0), P(0), P(0)])).toBe(0.5);
  });

  it('null, not NaN, with one class only or no calls', () => {
    expect(auroc([P(1), P(0)])).toBeNull();
    expect(auroc([N(1)])).toBeNull();
    expect(auroc([])).toBeNull();
  });

  it('equals the pairwise definition on random tables with many ties', () => {
    const rng = new Rng(7);
    for (let t = 0; t < 50; t++) {
      const items = Array.from({ length: rng.int(2, 40) }, () => ({
        score: rng.int(-3, 3) / 2,
        positive: rng.int(0, 2) === 0,
      }));
      const want = pairwiseAuroc(items);
      if (want === null) expect(auroc(items)).toBeNull();
      else expect(auroc(items)).toBeCloseTo(want, 12);
    }
  });

  it('refuses a score that is not a finite number', () => {
    expect(() => auroc([P(Number.NaN), N(0)])).toThrow('auroc: score NaN is not a finite number');
  });
});

describe('clusteredAuroc', () => {
  const opts = { reps: 4000, seed: 3 };

  it('resamples whole clusters: a hand-computed bootstrap distribution', () => {
    // Cluster a = {P 2, N 1} alone has AUROC 1; b = {P 0, N 1} alone 0; a with b: P2 beats both N1,
    // P0 neither: 2 of 4 = 0.5. Draws of two clusters: aa (1/4) -> 1, bb (1/4) -> 0, ab or ba (1/2)
    // -> 0.5. So the point estimate is 0.5 and the 2.5% / 97.5% quantiles are 0 and 1.
    const e = clusteredAuroc(
      [
        [P(2), N(1)],
        [P(0), N(1)],
      ],
      opts,
    );
    expect(e).toEqual({ auroc: 0.5, low: 0, high: 1, positives: 2, negatives: 2, clusters: 2, draws: 4000 });
  });

  it('skips draws left with one class; the interval is over the rest', () => {
    // a holds the positives, b the negatives: aa and bb (half the draws) have no AUROC; ab, ba -> 1.
    const e = clusteredAuroc([[P(1), P(2)], [N(0)]], opts);
    expect(e.auroc).toBe(1);
    expect([e.low, e.high]).toEqual([1, 1]);
    expect(e.draws).toBeGreaterThan(0.45 * opts.reps);
    expect(e.draws).toBeLessThan(0.55 * opts.reps);
  });

  it('one class overall: every number null, no draws', () => {
    expect(clusteredAuroc([[N(1)], [N(2)]], opts)).toEqual({
      auroc: null,
      low: null,
      high: null,
      positives: 0,
      negatives: 2,
      clusters: 2,
      draws: 0,
    });
    expect(clusteredAuroc([], opts)).toEqual({
      auroc: null,
      low: null,
      high: null,
      positives: 0,
      negatives: 0,
      clusters: 0,
      draws: 0,
    });
  });

  it('seeded: the same seed gives the same interval, and it brackets the estimate', () => {
    const rng = new Rng(11);
    const clusters = Array.from({ length: 30 }, () =>
      Array.from({ length: rng.int(1, 3) }, () => ({ score: rng.int(0, 4), positive: rng.int(0, 1) === 1 })),
    );
    const a = clusteredAuroc(clusters, { reps: 500, seed: 1 });
    expect(clusteredAuroc(clusters, { reps: 500, seed: 1 })).toEqual(a);
    expect(clusteredAuroc(clusters, { reps: 500, seed: 2 }).low).not.toBe(a.low);
    expect(a.low as number).toBeLessThanOrEqual(a.auroc as number);
    expect(a.high as number).toBeGreaterThanOrEqual(a.auroc as number);
    expect(a.auroc).toBeCloseTo(pairwiseAuroc(clusters.flat()) as number, 12);
  });
});

describe('blamedShare', () => {
  it('counts credit < 0 (0 is not blame)', () => {
    expect(blamedShare([-1, 0, 0.5, -0.25])).toEqual({ blamed: 2, calls: 4, share: 0.5 });
    expect(blamedShare([0, 0])).toEqual({ blamed: 0, calls: 2, share: 0 });
    expect(blamedShare([])).toEqual({ blamed: 0, calls: 0, share: null });
  });
});
