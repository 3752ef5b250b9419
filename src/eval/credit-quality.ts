/**
 * How well a credit tells wrong worker reports from right ones, measured without RL
 * (docs/credit-audit.md): the AUROC of a score for a binary label, with a percentile bootstrap
 * interval that resamples clusters (the trajectories, whose calls share one outcome and one set of
 * replays, so they are not independent), and the share of a set of calls that a credit blames.
 */
import { Rng } from '../random/rng.ts';
import { quantile, type BootstrapOptions } from './paired-bootstrap.ts';

/** One labelled call: the score ranked (here -credit) and whether it is a positive (a wrong report). */
export interface Scored {
  score: number;
  positive: boolean;
}

/**
 * Area under the ROC curve in its Mann-Whitney form: the probability that a random positive scores
 * above a random negative, a tie counting 1/2. Computed from mid-ranks:
 * AUROC = (R+ - n+(n+ + 1)/2) / (n+ n-), R+ the sum of the positives' ranks. Null (never NaN) when
 * either class is empty: the AUROC is then undefined.
 */
export function auroc(items: readonly Scored[]): number | null {
  let pos = 0;
  for (const it of items) {
    if (!Number.isFinite(it.score)) throw new Error(`auroc: score ${it.score} is not a finite number`);
    if (it.positive) pos++;
  }
  const neg = items.length - pos;
  if (pos === 0 || neg === 0) return null;
  const sorted = [...items].sort((a, b) => a.score - b.score);
  let rankSum = 0;
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && (sorted[j + 1] as Scored).score === (sorted[i] as Scored).score) j++;
    // Ranks i+1 .. j+1 share one score: each gets their mean.
    const mid = (i + j + 2) / 2;
    for (let t = i; t <= j; t++) if ((sorted[t] as Scored).positive) rankSum += mid;
    i = j + 1;
  }
  return (rankSum - (pos * (pos + 1)) / 2) / (pos * neg);
}

export interface AurocEstimate {
  /** AUROC over every call; null when one class is missing. */
  auroc: number | null;
  /** 95% percentile interval of the bootstrap AUROCs; null when no draw had both classes. */
  low: number | null;
  high: number | null;
  positives: number;
  negatives: number;
  /** Clusters (trajectories) the calls came from. */
  clusters: number;
  /** Bootstrap draws with both classes: the interval is over these (draws with one class have no AUROC). */
  draws: number;
}

/**
 * AUROC of the calls of `clusters` (one array of calls per trajectory) with a 95% percentile
 * interval: each of `opts.reps` draws resamples the clusters with replacement (seeded by
 * `opts.seed`) and scores every call of the drawn clusters. A draw left with one class is skipped.
 */
export function clusteredAuroc(clusters: readonly (readonly Scored[])[], opts: BootstrapOptions): AurocEstimate {
  const all = clusters.flat();
  const positives = all.filter((c) => c.positive).length;
  const base = { auroc: auroc(all), positives, negatives: all.length - positives, clusters: clusters.length };
  if (base.auroc === null) return { ...base, low: null, high: null, draws: 0 };
  const rng = new Rng(opts.seed);
  const draws: number[] = [];
  const drawn: Scored[] = [];
  for (let r = 0; r < opts.reps; r++) {
    drawn.length = 0;
    for (let i = 0; i < clusters.length; i++)
      drawn.push(...(clusters[rng.int(0, clusters.length - 1)] as readonly Scored[]));
    const a = auroc(drawn);
    if (a !== null) draws.push(a);
  }
  if (draws.length === 0) return { ...base, low: null, high: null, draws: 0 };
  draws.sort((x, y) => x - y);
  return { ...base, low: quantile(draws, 0.025), high: quantile(draws, 0.975), draws: draws.length };
}

export interface BlamedShare {
  /** Calls with credit < 0. */
  blamed: number;
  calls: number;
  /** blamed / calls; null when there are no calls. */
  share: number | null;
}

/** The share of `credits` below 0: the calls a credit blames. */
export function blamedShare(credits: readonly number[]): BlamedShare {
  const blamed = credits.filter((c) => c < 0).length;
  return { blamed, calls: credits.length, share: credits.length === 0 ? null : blamed / credits.length };
}
