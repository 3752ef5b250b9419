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
function quantile(sorted: readonly number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

/**
 * `a[s][q]` and `b[s][q]`: accuracy of each arm for seed s (same order in both) and question q
 * (same order in every row). Throws on tables that do not pair.
 */
export function pairedDifference(a: readonly (readonly number[])[], b: readonly (readonly number[])[], opts: BootstrapOptions): PairedDifference {
  if (a.length === 0 || a.length !== b.length) throw new Error(`paired difference: ${a.length} and ${b.length} seeds do not pair`);
  const nq = a[0]?.length ?? 0;
  if (nq === 0) throw new Error('paired difference: no questions');
  const d = a.map((row, s) => {
    const other = b[s] as readonly number[];
    if (row.length !== nq || other.length !== nq) throw new Error(`paired difference: seed ${s} has ${row.length} and ${other.length} questions, not ${nq}`);
    return row.map((x, q) => x - (other[q] as number));
  });
  const ns = d.length;
  const mean = d.reduce((acc, row) => acc + row.reduce((x, y) => x + y, 0), 0) / (ns * nq);
  const rng = new Rng(opts.seed);
  const means: number[] = new Array<number>(opts.reps);
  const qs: number[] = new Array<number>(nq);
  for (let r = 0; r < opts.reps; r++) {
    for (let j = 0; j < nq; j++) qs[j] = rng.int(0, nq - 1);
    let sum = 0;
    for (let i = 0; i < ns; i++) {
      const row = d[ns === 1 ? 0 : rng.int(0, ns - 1)] as number[];
      for (let j = 0; j < nq; j++) sum += row[qs[j] as number] as number;
    }
    means[r] = sum / (ns * nq);
  }
  const avg = means.reduce((x, y) => x + y, 0) / opts.reps;
  const se = Math.sqrt(means.reduce((x, y) => x + (y - avg) ** 2, 0) / Math.max(1, opts.reps - 1));
  means.sort((x, y) => x - y);
  const low = quantile(means, 0.025);
  const high = quantile(means, 0.975);
  return { mean, low, high, se, mde: MDE_FACTOR * se, seeds: ns, questions: nq, resolved: low > 0 || high < 0 };
}
