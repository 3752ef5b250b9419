import { describe, expect, it } from 'vitest';
import { againstBase, pairedMeans, verdicts, type Diff, type Report } from './likelihood-verdicts.ts';

const diff = (mean: number, low: number, high: number, mde = 0.025, seeds = 12): Diff => ({
  mean,
  low,
  high,
  mde,
  seeds,
});

/** A run after RL: sub-question rate, hedged reports of 100 calls, RL and credit seconds. */
const run = (method: string, seed: number, sub: number, hedged: number, rl: number, credit: number) => ({
  method,
  seed,
  after: { breakdown: { subQuestion: { rate: sub } }, hedged: { calls: 100, hedged } },
  rlSeconds: rl,
  creditSeconds: credit,
});

function report(): Report {
  return {
    // The report pairs broadcast first (A - B = broadcast - arm) except where the arm comes first.
    pairs: [
      { a: 'broadcast', b: 'loo-likelihood', diff: diff(0.01, -0.012, 0.025) },
      { a: 'broadcast', b: 'loo-repair-workers', diff: diff(0.02, 0.002, 0.04) },
      { a: 'oracle', b: 'broadcast', diff: diff(0.04, 0.02, 0.06) },
    ],
    plantedPairs: [{ a: 'broadcast', b: 'loo-likelihood', diff: diff(-0.01, -0.02, 0.001) }],
    runs: [
      run('broadcast', 0, 0.5, 1, 80, 0),
      run('broadcast', 1, 0.48, 1, 80, 0),
      run('broadcast', 12, 0.1, 1, 1, 0), // an extension seed: no arm beside it, so not in the paired means
      run('loo-likelihood', 0, 0.5, 3, 104, 12),
      run('loo-likelihood', 1, 0.5, 3, 104, 12),
      run('loo-repair-workers', 0, 0.47, 1, 200, 80),
      run('loo-repair-workers', 1, 0.44, 1, 200, 80),
      run('oracle', 0, 0.5, 4, 80, 1),
      run('oracle', 1, 0.5, 6, 80, 1),
    ],
  };
}

describe('likelihood ablation verdicts', () => {
  it('turns broadcast - arm into arm - broadcast with the interval flipped', () => {
    expect(againstBase(report().pairs, 'loo-likelihood')).toEqual(diff(-0.01, -0.025, 0.012));
    expect(againstBase(report().pairs, 'oracle')).toEqual(diff(0.04, 0.02, 0.06));
    expect(() => againstBase(report().pairs, 'loo')).toThrow(/no pair of loo and broadcast/);
  });

  it('means over the seeds both finished only', () => {
    expect(pairedMeans(report().runs, 'loo-likelihood', (r) => r.rlSeconds)).toEqual({ arm: 104, base: 80, seeds: 2 });
  });

  it('reads each statement as written, from hand-set numbers', () => {
    const v = verdicts(report());
    expect(v.map((x) => [x.n, x.outcome])).toEqual([
      [1, 'holds'], // loo-likelihood - broadcast = [-0.025, +0.012] includes 0
      [2, 'holds'], // its lower end -0.025 is above -0.030
      [3, 'fails'], // loo-repair-workers - broadcast = [-0.040, -0.002]: the upper end is below 0
      [4, 'fails'], // sub-questions 45.5% against 49.0%: 3.5 points lower
      [5, 'holds'], // [+0.02, +0.06] and +0.04 above the MDE 0.025
      [6, 'fails'], // loo-likelihood 3% is 2 points above broadcast's 1% (allowed), but the oracle's 5% is not under 5%
      [7, 'holds'], // planted: loo-likelihood - broadcast = [-0.001, +0.02] includes 0
      [8, 'fails'], // 104 / 80 = 1.3x is allowed; the credit stage, 12 / 104 = 11.5%, is not under 10%
    ]);
    expect(v[3]?.numbers).toBe(
      'hops asked their gold sub-question after RL: loo-repair-workers 45.5%, broadcast 49.0% (-3.5 points, 2 seeds)',
    );
    expect(v[7]?.numbers).toBe(
      'RL seconds per run 104 against 80 (1.30x, 2 seeds); credit stage 11.5% of the RL seconds',
    );

    const other = report();
    other.pairs[0] = { a: 'broadcast', b: 'loo-likelihood', diff: diff(0.015, 0.001, 0.035) };
    other.runs = other.runs.map((r) => (r.method === 'loo-likelihood' ? { ...r, creditSeconds: 5 } : r));
    other.runs = other.runs.map((r) =>
      r.method === 'oracle' ? { ...r, after: { ...r.after, hedged: { calls: 100, hedged: 4 } } } : r,
    );
    const w = verdicts(other);
    expect(w.map((x) => x.outcome)).toEqual(['fails', 'fails', 'fails', 'fails', 'holds', 'holds', 'holds', 'holds']);
  });

  it('decides an accuracy statement only once the MDE reached the target, and says which budget fell short', () => {
    const r = report();
    r.pairs[0] = { a: 'broadcast', b: 'loo-likelihood', diff: diff(0, -0.03, 0.03, 0.031, 16) };
    expect(verdicts(r)[0]?.outcome).toBe('stopping rule not finished');
    r.pairs[0] = { a: 'broadcast', b: 'loo-likelihood', diff: diff(0, -0.03, 0.03, 0.031, 24) };
    expect(
      verdicts(r)
        .slice(0, 2)
        .map((x) => x.outcome),
    ).toEqual(['not decidable', 'not decidable']);
  });
});
