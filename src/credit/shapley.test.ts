import { describe, it, expect } from 'vitest';
import { Rng } from '../random/rng.ts';
import { allCoalitions, fullCoalition } from './coalitions.ts';
import {
  efficiencyResidual,
  exactShapley,
  permutationCoalitions,
  samplePermutations,
  sampledShapley,
  type ValueFn,
} from './shapley.ts';

const table =
  (vals: Record<number, number>): ValueFn =>
  (s) => {
    const v = vals[s];
    if (v === undefined) throw new Error(`no value for ${s}`);
    return v;
  };

describe('exact Shapley', () => {
  it('symmetric players get equal credit; a dummy gets zero', () => {
    // players 0, 1 needed together (AND), player 2 dummy: v = 1 iff {0,1} subset of S.
    const v: ValueFn = (s) => ((s & 3) === 3 ? 1 : 0);
    const phi = exactShapley(3, v);
    expect(phi[0]).toBeCloseTo(0.5, 15);
    expect(phi[1]).toBeCloseTo(0.5, 15);
    expect(phi[2]).toBeCloseTo(0, 15);
  });
  it('redundant pair (OR) splits the credit that LOO gives to neither', () => {
    // v = 1 iff player 0 or 1 reports; LOO: v(N) - v(N\{m}) = 0 for both; Shapley 1/2 each.
    const phi = exactShapley(2, (s) => (s !== 0 ? 1 : 0));
    expect(phi).toEqual([0.5, 0.5]);
  });
  it('a negative player (saboteur) gets negative credit', () => {
    // v = 1 iff player 0 reports and player 1 (saboteur) does not.
    // phi_1 = 1/2 [v({1}) - v({})] + 1/2 [v({0,1}) - v({0})] = 1/2 (0 - 0) + 1/2 (0 - 1) = -1/2
    // phi_0 = 1/2 [v({0}) - v({})] + 1/2 [v({0,1}) - v({1})] = 1/2 (1) + 1/2 (0) = 1/2
    const phi = exactShapley(2, table({ 0: 0, 1: 1, 2: 0, 3: 0 }));
    expect(phi[0]).toBeCloseTo(0.5, 15);
    expect(phi[1]).toBeCloseTo(-0.5, 15);
    // efficiency: 0.5 - 0.5 = v(N) - v(empty) = 0 - 0
  });
  it('three-player glove game hand-computed; efficiency holds', () => {
    // player 0 owns a left glove, 1 and 2 right gloves; v = 1 iff a pair can be made.
    // Known values: phi = (2/3, 1/6, 1/6).
    const v: ValueFn = (s) => ((s & 1) === 1 && (s & 6) !== 0 ? 1 : 0);
    const phi = exactShapley(3, v);
    expect(phi[0]).toBeCloseTo(2 / 3, 15);
    expect(phi[1]).toBeCloseTo(1 / 6, 15);
    expect(phi[2]).toBeCloseTo(1 / 6, 15);
    expect(efficiencyResidual(3, phi, v)).toBeLessThan(1e-12);
  });
  it('efficiency on random value tables, K = 1..6', () => {
    const rng = new Rng(7);
    for (let k = 1; k <= 6; k++) {
      const vals = allCoalitions(k).map(() => rng.float() * 2 - 1);
      const v: ValueFn = (s) => vals[s];
      const phi = exactShapley(k, v);
      expect(Math.abs(phi.reduce((a, b) => a + b, 0) - (v(fullCoalition(k)) - v(0)))).toBeLessThan(1e-12);
    }
  });
});

describe('permutation-sampled Shapley', () => {
  it('is exact on an additive game and efficient on any game', () => {
    const rng = new Rng(11);
    const w = [0.3, -0.2, 0.5, 0, 1, 0.1, -0.4, 0.25];
    const additive: ValueFn = (s) => w.reduce((acc, x, m) => acc + ((s >> m) & 1 ? x : 0), 0);
    const perms = samplePermutations(8, 5, rng);
    const phi = sampledShapley(8, perms, additive);
    phi.forEach((p, m) => expect(p).toBeCloseTo(w[m], 12));
    const vals = new Map<number, number>();
    const anyGame: ValueFn = (s) => {
      if (!vals.has(s)) vals.set(s, rng.float());
      return vals.get(s) ?? 0;
    };
    const phi2 = sampledShapley(8, perms, anyGame);
    expect(efficiencyResidual(8, phi2, anyGame)).toBeLessThan(1e-12);
  });
  it('converges to the exact values (glove game, 4000 orderings)', () => {
    const v: ValueFn = (s) => ((s & 1) === 1 && (s & 6) !== 0 ? 1 : 0);
    const phi = sampledShapley(3, samplePermutations(3, 4000, new Rng(3)), v);
    expect(phi[0]).toBeGreaterThan(2 / 3 - 0.03);
    expect(phi[0]).toBeLessThan(2 / 3 + 0.03);
  });
  it('same seed, same orderings; coalitions needed are the prefixes', () => {
    expect(samplePermutations(5, 3, new Rng(1))).toEqual(samplePermutations(5, 3, new Rng(1)));
    // orderings [1,0] and [0,1]: prefixes {} {1} {0,1} {0}
    expect(
      permutationCoalitions([
        [1, 0],
        [0, 1],
      ]).sort((a, b) => a - b),
    ).toEqual([0, 1, 2, 3]);
  });
});
