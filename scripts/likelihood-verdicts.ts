/**
 * The verdicts on the likelihood ablation's eight predictions (docs/ablation-likelihood/PREDICTIONS.md),
 * read mechanically from its report: `npx tsx scripts/likelihood-verdicts.ts ablation.json`. Written
 * before the report existed, so that the reading of each statement is fixed before its numbers are seen.
 *
 * Differences are "A - broadcast" (the report pairs broadcast first: its A - B is negated, the interval
 * flipped). Shares and seconds compare the arm with broadcast over the seeds both finished (a paired mean;
 * broadcast may have more seeds from the stopping rule's extensions). An accuracy statement about an arm
 * whose MDE against broadcast is still above the target at the cap is not decidable, and one whose MDE is
 * above the target below the cap means the stopping rule has not finished.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { PairedDifference } from '../src/eval/paired-bootstrap.ts';
import type { AccuracyResult } from '../src/eval/held-out-accuracy.ts';
import { hedgedShare, meanOf, type RunOutcome } from '../src/report/ablation.ts';

/** The parts of `sharp ablate --report`'s ablation.json the verdicts read. */
export type Diff = Pick<PairedDifference, 'mean' | 'low' | 'high' | 'mde' | 'seeds'>;
interface Pair {
  a: string;
  b: string;
  diff: Diff;
}
interface Run extends Pick<RunOutcome, 'seed' | 'rlSeconds' | 'creditSeconds'> {
  method: string;
  after: Pick<AccuracyResult, 'hedged'> & { breakdown: { subQuestion: { rate: number | null } } };
}
export interface Report {
  pairs: Pair[];
  plantedPairs?: Pair[];
  runs: Run[];
}

export type Outcome = 'holds' | 'fails' | 'not decidable' | 'stopping rule not finished';
export interface Verdict {
  n: number;
  claim: string;
  numbers: string;
  outcome: Outcome;
}

export const TARGET_MDE = 0.03;
export const SEED_CAP = 24;
const LIK = 'loo-likelihood';
const REPAIR = 'loo-repair-workers';
const ORACLE = 'oracle';
const BASE = 'broadcast';

/** arm - broadcast from the report's pairs, either order; throws when the report lacks the pair. */
export function againstBase(pairs: readonly Pair[], arm: string): Diff {
  const p = pairs.find((x) => (x.a === arm && x.b === BASE) || (x.a === BASE && x.b === arm));
  if (!p) throw new Error(`the report has no pair of ${arm} and ${BASE}`);
  if (p.a === arm) return p.diff;
  const d = p.diff;
  return { ...d, mean: -d.mean, low: -d.high, high: -d.low };
}

/** Paired means of `pick` over the seeds both the arm and broadcast finished (null values left out). */
export function pairedMeans(
  runs: readonly Run[],
  arm: string,
  pick: (r: Run) => number | null,
): { arm: number; base: number; seeds: number } {
  let a = 0;
  let b = 0;
  let n = 0;
  for (const r of runs.filter((x) => x.method === arm)) {
    const base = runs.find((x) => x.method === BASE && x.seed === r.seed);
    const va = pick(r);
    const vb = base ? pick(base) : null;
    if (va === null || vb === null) continue;
    a += va;
    b += vb;
    n++;
  }
  if (n === 0) throw new Error(`no seed of ${arm} and ${BASE} has the value`);
  return { arm: a / n, base: b / n, seeds: n };
}

const interval = (d: Diff): string =>
  `${sgn(d.mean)} [${sgn(d.low)}, ${sgn(d.high)}], MDE ${d.mde.toFixed(3)}, ${d.seeds} seeds`;
const sgn = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const points = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;

/** An accuracy statement's outcome given the arm's MDE: decided only where the budget reached the target. */
function decided(d: Diff, holds: boolean): Outcome {
  if (d.mde > TARGET_MDE) return d.seeds >= SEED_CAP ? 'not decidable' : 'stopping rule not finished';
  return holds ? 'holds' : 'fails';
}

export function verdicts(report: Report): Verdict[] {
  if (!Array.isArray(report.pairs) || !Array.isArray(report.runs))
    throw new Error('not an ablation report (no pairs or runs: sharp ablate --report writes ablation.json)');
  const lik = againstBase(report.pairs, LIK);
  const repair = againstBase(report.pairs, REPAIR);
  const oracle = againstBase(report.pairs, ORACLE);
  const out: Verdict[] = [];
  out.push({
    n: 1,
    claim: 'loo-likelihood ties with broadcast (interval includes 0)',
    numbers: `loo-likelihood - broadcast ${interval(lik)}`,
    outcome: decided(lik, lik.low <= 0 && lik.high >= 0),
  });
  out.push({
    n: 2,
    claim: 'loo-likelihood does not lose (lower end above -0.030)',
    numbers: `lower end ${sgn(lik.low)}`,
    outcome: decided(lik, lik.low > -0.03),
  });
  out.push({
    n: 3,
    claim: 'repair without planner blame no longer loses (upper end above 0)',
    numbers: `loo-repair-workers - broadcast ${interval(repair)}`,
    outcome: decided(repair, repair.high > 0),
  });
  const sub = pairedMeans(report.runs, REPAIR, (r) => r.after.breakdown.subQuestion.rate);
  out.push({
    n: 4,
    claim: "the planner's sub-questions do not fall under loo-repair-workers (within 3 points of broadcast)",
    numbers:
      `hops asked their gold sub-question after RL: loo-repair-workers ${pct(sub.arm)}, broadcast ` +
      `${pct(sub.base)} (${points(sub.arm - sub.base)} points, ${sub.seeds} seeds)`,
    outcome: Math.abs(sub.arm - sub.base) <= 0.03 ? 'holds' : 'fails',
  });
  out.push({
    n: 5,
    claim: 'the oracle beats broadcast (interval above 0, mean above its MDE)',
    numbers: `oracle - broadcast ${interval(oracle)}`,
    outcome: decided(oracle, oracle.low > 0 && oracle.mean > oracle.mde),
  });
  const arms = [...new Set(report.runs.map((r) => r.method))];
  const hedged = pairedMeans(report.runs, LIK, (r) => hedgedShare(r.after));
  const perArm = arms.map((m) => ({
    m,
    mean: meanOf(report.runs.filter((r) => r.method === m).map((r) => hedgedShare(r.after))) ?? Number.NaN,
  }));
  out.push({
    n: 6,
    claim: 'no hedging (loo-likelihood at most 2 points above broadcast; under 5% in every arm)',
    numbers:
      `hedged reports after RL: loo-likelihood ${pct(hedged.arm)} against broadcast ${pct(hedged.base)} ` +
      `(${hedged.seeds} seeds); per arm ${perArm.map((a) => `${a.m} ${pct(a.mean)}`).join(', ')}`,
    outcome: hedged.arm - hedged.base <= 0.02 && perArm.every((a) => a.mean < 0.05) ? 'holds' : 'fails',
  });
  const planted = againstBase(report.plantedPairs ?? [], LIK);
  out.push({
    n: 7,
    claim: 'planted claim: loo-likelihood - broadcast includes 0',
    numbers: `share of worker calls repeating the planted claim, loo-likelihood - broadcast ${interval(planted)}`,
    outcome: planted.low <= 0 && planted.high >= 0 ? 'holds' : 'fails',
  });
  const rl = pairedMeans(report.runs, LIK, (r) => r.rlSeconds);
  const share = pairedMeans(report.runs, LIK, (r) => (r.rlSeconds > 0 ? r.creditSeconds / r.rlSeconds : null));
  const ratio = rl.arm / rl.base;
  out.push({
    n: 8,
    claim: "cost: loo-likelihood's RL seconds at most 1.3x broadcast's, its credit stage under 10%",
    numbers:
      `RL seconds per run ${rl.arm.toFixed(0)} against ${rl.base.toFixed(0)} (${ratio.toFixed(2)}x, ` +
      `${rl.seeds} seeds); credit stage ${pct(share.arm)} of the RL seconds`,
    outcome: ratio <= 1.3 && share.arm < 0.1 ? 'holds' : 'fails',
  });
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: npx tsx scripts/likelihood-verdicts.ts ABLATION.json');
    process.exit(2);
  }
  try {
    const report = JSON.parse(readFileSync(file, 'utf8')) as Report;
    const rows = verdicts(report);
    console.log('| # | prediction | numbers | verdict |\n| --- | --- | --- | --- |');
    for (const v of rows) console.log(`| ${v.n} | ${v.claim} | ${v.numbers} | **${v.outcome}** |`);
  } catch (e) {
    console.error(`likelihood-verdicts: ${file}: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  }
}
