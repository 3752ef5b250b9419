import { Rng } from '../random/rng.ts';

/**
 * Paired comparison of two arms of an ablation over the same test questions and seeds. The unit is
 * a (seed, question) cell: each arm's accuracy on that question in that seed's run (the mean over
 * its k samples), so the difference d[s][q] = A[s][q] - B[s][q] removes what the question itself
 * contributes (its difficulty is shared by both arms). The interval is a two-level bootstrap:
 * seeds resampled with replacement, and questions resampled with replacement (the same questions
 * for every seed of one draw, as the test split is shared), so both the seed-to-seed spread of
 * training and the question-to-question spread of the test set widen it.
 *
 * The minimum detectable effect is the true difference this budget would find with 80% power in a
 * two-sided test at 5%: (z_0.975 + z_0.8) x SE, with SE the bootstrap standard error of the mean
 * difference (Cohen's power analysis with a normal approximation).
 */
export interface PairedDifference {
  /** Mean of d over every (seed, question) cell. */
  mean: number;
  /** 95% percentile interval of the bootstrap means. */
  low: number;
  high: number;
  /** Bootstrap standard error of the mean difference. */
  se: number;
  /** Minimum detectable effect at 80% power, alpha 0.05 two-sided. */
  mde: number;
  seeds: number;
  questions: number;
  /** The interval excludes 0: the sign of the difference is resolved at this budget. */
  resolved: boolean;
}

/** z_0.975 + z_0.8: the multiplier of the standard error in the minimum detectable effect. */
export const MDE_FACTOR = 1.959964 + 0.841621;

export interface BootstrapOptions {
  reps: number;
  seed: number;
}

/** Quantile q of sorted values (linear interpolation between order statistics). */
export function quantile(sorted: readonly number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

/**
 * `a[s][q]` and `b[s][q]`: accuracy of each arm for seed s (same order in both) and question q
 * (same order in every row). Throws on tables that do not pair.
 */
export function pairedDifference(
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
  opts: BootstrapOptions,
): PairedDifference {
  if (a.length === 0 || a.length !== b.length)
    throw new Error(`paired difference: ${a.length} and ${b.length} seeds do not pair`);
  const nq = a[0]?.length ?? 0;
  if (nq === 0) throw new Error('paired difference: no questions');
  const d = a.map((row, s) => {
    const other = b[s] as readonly number[];
    if (row.length !== nq || other.length !== nq)
      throw new Error(`paired difference: seed ${s} has ${row.length} and ${other.length} questions, not ${nq}`);
    return row.map((x, q) => x - (other[q] as number));
  });
  const ns = d.length;
  const mean = d.reduce((acc, row) => acc + row.reduce((x, y) => x + y, 0), 0) / (ns * nq);
  const { low, high, se } = bootstrapCells(ns, nq, opts, (seeds, qs) => {
    let sum = 0;
    for (const i of seeds) {
      const row = d[i] as number[];
      for (const q of qs) sum += row[q] as number;
    }
    return sum / (ns * nq);
  });
  return { mean, low, high, se, mde: MDE_FACTOR * se, seeds: ns, questions: nq, resolved: low > 0 || high < 0 };
}

/**
 * Bootstrap of a statistic of (seed, question) cells: each draw resamples the questions (shared by
 * every seed) and the seeds, with replacement, and evaluates `stat` on the drawn indices; returns
 * the 95% percentile interval and the standard error of the draws.
 */
function bootstrapCells(
  ns: number,
  nq: number,
  opts: BootstrapOptions,
  stat: (seeds: readonly number[], questions: readonly number[]) => number,
): { low: number; high: number; se: number } {
  const rng = new Rng(opts.seed);
  const draws: number[] = new Array<number>(opts.reps);
  const qs: number[] = new Array<number>(nq);
  const seeds: number[] = new Array<number>(ns);
  for (let r = 0; r < opts.reps; r++) {
    for (let j = 0; j < nq; j++) qs[j] = rng.int(0, nq - 1);
    for (let i = 0; i < ns; i++) seeds[i] = ns === 1 ? 0 : rng.int(0, ns - 1);
    draws[r] = stat(seeds, qs);
  }
  const avg = draws.reduce((x, y) => x + y, 0) / opts.reps;
  const se = Math.sqrt(draws.reduce((x, y) => x + (y - avg) ** 2, 0) / Math.max(1, opts.reps - 1));
  draws.sort((x, y) => x - y);
  return { low: quantile(draws, 0.025), high: quantile(draws, 0.975), se };
}

/**
 * Counts of one arm in one (seed, question) cell: a ratio's numerator and denominator (planted reports of worker
 * calls).
 */
export interface RatioCell {
  num: number;
  den: number;
}

/**
 * Paired difference of a ratio of sums between two arms (A - B), e.g. the share of worker calls
 * that repeat a planted claim: per arm, sum of numerators over sum of denominators of the cells
 * drawn; cells are (seed, question) as in pairedDifference, resampled the same way. A draw whose
 * denominators sum to 0 counts as a share of 0.
 */
export function pairedRatioDifference(
  a: readonly (readonly RatioCell[])[],
  b: readonly (readonly RatioCell[])[],
  opts: BootstrapOptions,
): PairedDifference {
  if (a.length === 0 || a.length !== b.length)
    throw new Error(`paired difference: ${a.length} and ${b.length} seeds do not pair`);
  const nq = a[0]?.length ?? 0;
  if (nq === 0) throw new Error('paired difference: no questions');
  a.forEach((row, s) => {
    const other = b[s] as readonly RatioCell[];
    if (row.length !== nq || other.length !== nq)
      throw new Error(`paired difference: seed ${s} has ${row.length} and ${other.length} questions, not ${nq}`);
  });
  const ns = a.length;
  const share = (t: readonly (readonly RatioCell[])[], seeds: readonly number[], qs: readonly number[]): number => {
    let num = 0;
    let den = 0;
    for (const i of seeds) {
      const row = t[i] as readonly RatioCell[];
      for (const q of qs) {
        num += (row[q] as RatioCell).num;
        den += (row[q] as RatioCell).den;
      }
    }
    return den === 0 ? 0 : num / den;
  };
  const allSeeds = Array.from({ length: ns }, (_, i) => i);
  const allQs = Array.from({ length: nq }, (_, j) => j);
  const mean = share(a, allSeeds, allQs) - share(b, allSeeds, allQs);
  const { low, high, se } = bootstrapCells(ns, nq, opts, (seeds, qs) => share(a, seeds, qs) - share(b, seeds, qs));
  return { mean, low, high, se, mde: MDE_FACTOR * se, seeds: ns, questions: nq, resolved: low > 0 || high < 0 };
}
