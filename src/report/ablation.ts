import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type * as vl from 'vega-lite';
import type { AblationMethod } from '../config/sections/ablation.ts';
import { readMetrics, type MetricsLine } from '../train/metrics/jsonl.ts';
import type { AccuracyResult } from '../eval/held-out-accuracy.ts';
import { readSummary } from '../eval/train-summary.ts';
import {
  pairedDifference,
  pairedRatioDifference,
  type PairedDifference,
  type RatioCell,
} from '../eval/paired-bootstrap.ts';
import { accuracyOn, QUESTION_SHAPES, questionShape, type QuestionShape } from '../eval/shapes.ts';

/**
 * The ablation's result from its run folders (docs/results.md): per run the held-out accuracy with
 * its interval, the curve against RL step, and the costs; per method the mean and spread over seeds.
 * Pure functions over what the runs wrote (summary.json, metrics.jsonl), so a report can be rebuilt
 * from the folders alone.
 */
export const METHOD_LABELS: Record<AblationMethod, string> = {
  broadcast: 'broadcast (accuracy, every agent alike)',
  matpo: 'MATPO (accuracy + 0.1 format, broadcast)',
  loo: 'SHARP: leave-one-out credit',
  shapley: 'SHARP: Shapley credit',
  'loo-resample': 'leave-one-out credit, resampled workers',
  'loo-repair': 'leave-one-out credit, repaired reports',
  'loo-repair-workers': 'leave-one-out credit, repaired reports, planner not blamed',
  'loo-likelihood': 'leave-one-out credit, gold-answer likelihood',
  'shapley-likelihood': 'Shapley credit, gold-answer likelihood',
  'loo-likelihood-seq': 'sequential gain of the gold-answer likelihood',
  oracle: 'CEILING: oracle worker reward (gold sub-answers)',
  single: 'single-agent GRPO',
};

/** One pair of arms: A - B, paired over the seeds both ran and the test questions. */
export interface PairRow {
  a: AblationMethod;
  b: AblationMethod;
  diff: PairedDifference;
}

export interface RunOutcome {
  method: AblationMethod;
  seed: number;
  dir: string;
  before: AccuracyResult;
  after: AccuracyResult;
  /** (step, held-out accuracy): before RL at 0, every eval.heldOutEvery steps, after RL at the last step. */
  curve: { step: number; accuracy: number }[];
  steps: number;
  generatedTokens: number;
  replays: number;
  /** Groups skipped because every advantage was zero (no signal), over all steps. */
  zeroGroups: number;
  groups: number;
  /**
   * Seconds of the RL steps: rollout, credit and update (perf/rollout_s + perf/update_s) summed over metrics.jsonl,
   * where a resumed run keeps each step once; the `rl` stage of summary.json (which also holds the validation
   * evaluations, and only the last process's share of a resumed run) for runs whose lines carry no timings.
   */
  rlSeconds: number;
  /** Seconds of the credit stage (replays, likelihood scoring, credit) within rlSeconds (perf/credit_s). */
  creditSeconds: number;
  /** Seconds of the whole run (every stage: RL and its test evaluations). */
  wallSeconds: number;
}

export interface MethodSummary {
  method: AblationMethod;
  label: string;
  seeds: number[];
  /** Mean and sample std (n - 1; 0 for one seed) of the final held-out accuracy over seeds. */
  mean: number;
  std: number;
  /** Mean of (after - before) over seeds. */
  gain: number;
  before: number;
  n: number;
  harmfulBefore: number | null;
  harmfulAfter: number | null;
  invalidAfter: number;
  stages: Record<'subQuestion' | 'retrieval' | 'report' | 'finalGivenReports', number | null>;
  generatedTokens: number;
  replays: number;
  zeroGroupShare: number;
  rlSeconds: number;
  /** Mean over seeds of a run's credit seconds over its RL seconds. */
  creditShare: number;
  wallSeconds: number;
  /**
   * Test accuracy before and after RL per question shape (mean over seeds; null for a shape the split lacks); only when
   * the split mixes shapes.
   */
  shapes?: Record<QuestionShape, { before: number | null; after: number | null }>;
  /**
   * Share of worker calls repeating a planted claim before and after RL (mean over seeds); only with planted claims.
   */
  planted?: { before: number | null; after: number | null };
  /**
   * Share of worker reports naming several candidate answers before and after RL (mean over seeds; hedging.ts):
   * how a worker could raise a likelihood credit without being right. Absent in runs measured before it was recorded.
   */
  hedged?: { before: number | null; after: number | null };
}

/** Mean and sample standard deviation (n - 1): NaN for no values, std 0 for one. */
export function meanSampleStd(xs: readonly number[]): { mean: number; std: number } {
  if (xs.length === 0) return { mean: Number.NaN, std: Number.NaN };
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length === 1) return { mean, std: 0 };
  const v = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1);
  return { mean, std: Math.sqrt(v) };
}

const sum = (lines: readonly MetricsLine[], key: string): number =>
  lines.reduce((a, l) => a + (typeof l[key] === 'number' ? (l[key] as number) : 0), 0);

/** A run's RL and credit seconds from its metrics lines (`rl` when they carry no timings). */
function stepSeconds(lines: readonly MetricsLine[], rl: number): { rlSeconds: number; creditSeconds: number } {
  const timed = lines.some((l) => typeof l['perf/rollout_s'] === 'number');
  return {
    rlSeconds: timed ? sum(lines, 'perf/rollout_s') + sum(lines, 'perf/update_s') : rl,
    creditSeconds: sum(lines, 'perf/credit_s'),
  };
}

/** One finished run (summary with both accuracies), or null when the run is not finished. */
export function readRun(dir: string, method: AblationMethod, seed: number): RunOutcome | null {
  const s = existsSync(join(dir, 'summary.json')) ? readSummary(dir) : undefined;
  if (!s?.heldOutBefore || !s.heldOutAfterRl || s.stopped) return null;
  const file = join(dir, 'metrics.jsonl');
  const lines = existsSync(file) ? readMetrics(file) : [];
  const steps = s.rlSteps ?? lines.length;
  const curve = [{ step: 0, accuracy: s.heldOutBefore.accuracy }];
  for (const l of lines)
    if (typeof l['heldout/accuracy'] === 'number' && l.step < steps)
      curve.push({ step: l.step, accuracy: l['heldout/accuracy'] as number });
  curve.push({ step: steps, accuracy: s.heldOutAfterRl.accuracy });
  return {
    method,
    seed,
    dir,
    before: s.heldOutBefore,
    after: s.heldOutAfterRl,
    curve,
    steps,
    generatedTokens: sum(lines, 'rollout/generated_tokens'),
    replays: sum(lines, 'credit/replays'),
    zeroGroups: sum(lines, 'groups/skipped'),
    groups: sum(lines, 'groups/total'),
    ...stepSeconds(lines, s.stages.rl ?? 0),
    wallSeconds: Object.values(s.stages).reduce((a, b) => a + b, 0),
  };
}

/** Per-question accuracy of a run's test measurement (null for runs written before questions were kept). */
function questionAccuracy(r: RunOutcome): Map<string, number> | null {
  const qs = r.after.questions;
  if (!qs) return null;
  const k = r.after.samples ?? 1;
  return new Map(qs.map((q) => [q.id, q.correct / k]));
}

/**
 * Every pair of `methods` (in order, A before B), paired over the seeds both finished and the
 * questions both measured (and `keep` accepts): `cells` gives a run's per-question values (null when
 * it has none), `diff` compares the two tables; pairs with no common seed are left out.
 */
function pairArms<T>(
  methods: readonly AblationMethod[],
  runs: readonly RunOutcome[],
  cells: (r: RunOutcome) => Map<string, T> | null,
  diff: (a: T[][], b: T[][]) => PairedDifference,
  keep: (questionId: string) => boolean = () => true,
): PairRow[] {
  const out: PairRow[] = [];
  for (let i = 0; i < methods.length; i++) {
    for (let j = i + 1; j < methods.length; j++) {
      const a = methods[i] as AblationMethod;
      const b = methods[j] as AblationMethod;
      const ta: T[][] = [];
      const tb: T[][] = [];
      for (const ra of runs.filter((r) => r.method === a)) {
        const rb = runs.find((r) => r.method === b && r.seed === ra.seed);
        const qa = cells(ra);
        const qb = rb ? cells(rb) : null;
        if (!qa || !qb) continue;
        const ids = [...qa.keys()].filter((id) => qb.has(id) && keep(id));
        ta.push(ids.map((id) => qa.get(id) as T));
        tb.push(ids.map((id) => qb.get(id) as T));
      }
      if (ta.length === 0 || (ta[0]?.length ?? 0) === 0) continue;
      out.push({ a, b, diff: diff(ta, tb) });
    }
  }
  return out;
}

/** Every pair of arms on test accuracy (per question: the mean of its samples). */
export function pairwise(
  methods: readonly AblationMethod[],
  runs: readonly RunOutcome[],
  opts: { reps: number; seed: number },
  keep: (questionId: string) => boolean = () => true,
): PairRow[] {
  return pairArms(methods, runs, questionAccuracy, (a, b) => pairedDifference(a, b, opts), keep);
}

/** The shapes among a run's test questions, in QUESTION_SHAPES order. */
export function shapesOf(runs: readonly RunOutcome[]): QuestionShape[] {
  const seen = new Set((runs[0]?.after.questions ?? []).map((q) => questionShape(q.id)));
  return QUESTION_SHAPES.filter((s) => seen.has(s));
}

/** Test questions of each shape (of the first run; every run of an ablation shares the test split). */
export function shapeCounts(runs: readonly RunOutcome[]): Record<QuestionShape, number> {
  const out: Record<QuestionShape, number> = { chain: 0, comparison: 0, aggregation: 0 };
  for (const q of runs[0]?.after.questions ?? []) out[questionShape(q.id)]++;
  return out;
}

/**
 * The question subsets the report pairs arms on when the test split mixes shapes: the new shapes together, and chains
 * alone.
 */
const SHAPE_SUBSETS: readonly { name: string; shapes: readonly QuestionShape[] }[] = [
  { name: 'comparison + aggregation', shapes: ['comparison', 'aggregation'] },
  { name: 'chain', shapes: ['chain'] },
];

/** Per subset of question shapes, every pair of arms paired over the questions of that subset. */
export function shapePairs(
  methods: readonly AblationMethod[],
  runs: readonly RunOutcome[],
  opts: { reps: number; seed: number },
): { subset: string; pairs: PairRow[] }[] {
  if (shapesOf(runs).length < 2) return [];
  return SHAPE_SUBSETS.map((sub) => ({
    subset: sub.name,
    pairs: pairwise(methods, runs, opts, (id) => sub.shapes.includes(questionShape(id))),
  }));
}

/**
 * Share of worker calls that repeat the planted claim (ratio of sums) in a measurement; null without planted claims or
 * calls.
 */
const plantedShare = (a: AccuracyResult): number | null => a.planted?.share ?? null;

/** Share of worker reports that hedge in a measurement; null when it recorded none. */
export const hedgedShare = (a: Pick<AccuracyResult, 'hedged'>): number | null =>
  a.hedged && a.hedged.calls > 0 ? a.hedged.hedged / a.hedged.calls : null;

/** Per-question planted reports and worker calls of a run's test measurement; null when it has none. */
function plantedCells(r: RunOutcome): Map<string, RatioCell> | null {
  if (!r.after.planted) return null;
  const qs = r.after.questions ?? [];
  return new Map(qs.map((q) => [q.id, { num: q.planted ?? 0, den: q.calls ?? 0 }]));
}

/**
 * Every pair of multi-agent arms compared on the share of worker calls that repeat a planted claim
 * after RL (A - B; a negative difference: A repeats it less), paired over seeds and test questions
 * like accuracy; arms without worker calls (single) are left out.
 */
export function plantedPairs(
  methods: readonly AblationMethod[],
  runs: readonly RunOutcome[],
  opts: { reps: number; seed: number },
): PairRow[] {
  const multi = methods.filter((m) => runs.some((r) => r.method === m && (r.after.planted?.calls ?? 0) > 0));
  return pairArms(multi, runs, plantedCells, (a, b) => pairedRatioDifference(a, b, opts));
}

/** Mean of the finite numbers among `xs`; null when there are none. */
export const meanOf = (xs: readonly (number | null | undefined)[]): number | null => {
  const ok = xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  return ok.length === 0 ? null : ok.reduce((a, b) => a + b, 0) / ok.length;
};

export function summarise(method: AblationMethod, runs: readonly RunOutcome[]): MethodSummary {
  const { mean, std } = meanSampleStd(runs.map((r) => r.after.accuracy));
  const b = (r: RunOutcome) => r.after.breakdown;
  return {
    method,
    label: METHOD_LABELS[method],
    seeds: runs.map((r) => r.seed),
    mean,
    std,
    gain: meanOf(runs.map((r) => r.after.accuracy - r.before.accuracy)) ?? Number.NaN,
    before: meanOf(runs.map((r) => r.before.accuracy)) ?? Number.NaN,
    n: runs[0]?.after.total ?? 0,
    harmfulBefore: meanOf(runs.map((r) => r.before.workerCalls?.harmful)),
    harmfulAfter: meanOf(runs.map((r) => r.after.workerCalls?.harmful)),
    invalidAfter: meanOf(runs.map((r) => b(r).invalidCalls.rate ?? 0)) ?? 0,
    stages: {
      subQuestion: meanOf(runs.map((r) => b(r).subQuestion.rate)),
      retrieval: meanOf(runs.map((r) => b(r).retrieval.rate)),
      report: meanOf(runs.map((r) => b(r).report.rate)),
      finalGivenReports: meanOf(runs.map((r) => b(r).finalGivenReports.rate)),
    },
    generatedTokens: meanOf(runs.map((r) => r.generatedTokens)) ?? 0,
    replays: meanOf(runs.map((r) => r.replays)) ?? 0,
    zeroGroupShare: meanOf(runs.map((r) => (r.groups > 0 ? r.zeroGroups / r.groups : 0))) ?? 0,
    rlSeconds: meanOf(runs.map((r) => r.rlSeconds)) ?? 0,
    creditShare: meanOf(runs.map((r) => (r.rlSeconds > 0 ? r.creditSeconds / r.rlSeconds : 0))) ?? 0,
    wallSeconds: meanOf(runs.map((r) => r.wallSeconds)) ?? 0,
    ...(shapesOf(runs).length > 1
      ? {
          shapes: Object.fromEntries(
            QUESTION_SHAPES.map((sh) => [
              sh,
              {
                before: meanOf(runs.map((r) => accuracyOn(r.before, [sh]))),
                after: meanOf(runs.map((r) => accuracyOn(r.after, [sh]))),
              },
            ]),
          ) as NonNullable<MethodSummary['shapes']>,
        }
      : {}),
    ...(runs.some((r) => r.after.hedged)
      ? {
          hedged: {
            before: meanOf(runs.map((r) => hedgedShare(r.before))),
            after: meanOf(runs.map((r) => hedgedShare(r.after))),
          },
        }
      : {}),
    ...(runs.some((r) => r.after.planted)
      ? {
          planted: {
            before: meanOf(runs.map((r) => plantedShare(r.before))),
            after: meanOf(runs.map((r) => plantedShare(r.after))),
          },
        }
      : {}),
  };
}

const f2 = (x: number | null): string => (x === null || Number.isNaN(x) ? '-' : x.toFixed(2));
const f3 = (x: number | null): string => (x === null || Number.isNaN(x) ? '-' : x.toFixed(3));
const pct = (x: number | null): string => (x === null || Number.isNaN(x) ? '-' : `${(100 * x).toFixed(1)}%`);

/** A share before and after RL per arm (mean over seeds), under its heading; arms without it are left out. */
function shareTable(
  heading: string,
  summaries: readonly MethodSummary[],
  pick: (s: MethodSummary) => { before: number | null; after: number | null } | undefined,
): string[] {
  const out = ['', heading, '', '| method | before RL | after RL | change |', '| --- | --- | --- | --- |'];
  for (const s of summaries) {
    const p = pick(s);
    if (!p || p.after === null) continue;
    const change = p.before === null ? '-' : signedPct(p.after - p.before);
    out.push(`| ${s.label} | ${pct(p.before)} | ${pct(p.after)} | ${change} |`);
  }
  return out;
}

/** The markdown report: the comparison table, the per-stage table, and every run with its interval. */
const signed = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;

/** One line saying which differences the budget resolves (interval excludes 0) and which it does not. */
export function resolvedLine(pairs: readonly PairRow[]): string {
  const name = (p: PairRow): string => `${p.a} - ${p.b}`;
  const yes = pairs.filter((p) => p.diff.resolved).map((p) => `${name(p)} ${signed(p.diff.mean)}`);
  const no = pairs.filter((p) => !p.diff.resolved).map(name);
  return (
    `Resolved at this budget: ${yes.length > 0 ? yes.join(', ') : 'none'}; not resolved (interval includes 0): ` +
    `${no.length > 0 ? no.join(', ') : 'none'}.`
  );
}

/** The report's sections for worlds with several question shapes and planted claims (absent in a chain-only world). */
export interface WorldSections {
  shapePairs: readonly { subset: string; pairs: readonly PairRow[] }[];
  plantedPairs: readonly PairRow[];
}

function pairTable(pairs: readonly PairRow[], fmt: (x: number) => string): string[] {
  const out = [
    '| A | B | A - B | 95% interval | MDE | seeds x questions | resolved |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const p of pairs)
    out.push(
      `| ${p.a} | ${p.b} | ${fmt(p.diff.mean)} | [${fmt(p.diff.low)}, ${fmt(p.diff.high)}] | ` +
        `${Math.abs(p.diff.mde) < 5e-4 ? '0' : fmt(p.diff.mde).replace(/^\+/, '')} | ${p.diff.seeds} x ` +
        `${p.diff.questions} | ${p.diff.resolved ? 'yes' : 'no'} |`,
    );
  return out;
}

const signedPct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;

function worldMarkdown(
  summaries: readonly MethodSummary[],
  runs: readonly RunOutcome[],
  world: WorldSections,
): string[] {
  const out: string[] = [];
  const shapes = shapesOf(runs);
  if (shapes.length > 1) {
    const n = shapeCounts(runs);
    out.push('', '## Test accuracy by question shape (mean over seeds, before -> after RL)', '');
    out.push(`| method | ${shapes.map((sh) => `${sh} (${n[sh]} questions)`).join(' | ')} |`);
    out.push(`| --- | ${shapes.map(() => '---').join(' | ')} |`);
    for (const s of summaries)
      out.push(
        `| ${s.label} | ${shapes
          .map((sh) => `${f3(s.shapes?.[sh].before ?? null)} -> ${f3(s.shapes?.[sh].after ?? null)}`)
          .join(' | ')} |`,
      );
    for (const sub of world.shapePairs) {
      if (sub.pairs.length === 0) continue;
      out.push('', `### Paired differences on ${sub.subset} questions (A - B)`, '');
      out.push(...pairTable(sub.pairs, signed));
    }
  }
  if (summaries.some((s) => (s.hedged?.after ?? null) !== null))
    out.push(
      ...shareTable(
        '## Worker reports that hedge (several candidate answers; share, mean over seeds)',
        summaries,
        (s) => s.hedged,
      ),
    );
  if (summaries.some((s) => (s.planted?.after ?? null) !== null)) {
    out.push(
      ...shareTable(
        '## Worker calls that repeat the planted claim (share of all worker calls, mean over seeds)',
        summaries,
        (s) => s.planted,
      ),
    );
    if (world.plantedPairs.length > 0) {
      out.push(
        '',
        'Paired over (seed, test question) cells; the statistic is the ratio of sums (planted reports over worker ' +
          'calls) of the cells drawn; negative: A repeats the claim less than B.',
        '',
      );
      out.push(...pairTable(world.plantedPairs, signedPct));
    }
  }
  return out;
}

export function ablationMarkdown(
  summaries: readonly MethodSummary[],
  runs: readonly RunOutcome[],
  context: { command: string; machine: string; date: string },
  pairs: readonly PairRow[] = [],
  world: WorldSections = { shapePairs: [], plantedPairs: [] },
): string {
  const out: string[] = [];
  out.push('# SHARP ablation', '');
  out.push(`Command: \`${context.command}\`  `, `Machine: ${context.machine}  `, `Date: ${context.date}`, '');
  const k = runs[0]?.after.samples ?? 1;
  const nq = (runs[0]?.after.total ?? 0) / k;
  out.push(
    `Test accuracy after RL: mean and sample std over seeds; each run samples ${k} ` +
      `trajector${k === 1 ? 'y' : 'ies'} per test question (${nq} questions; per-run 95% intervals below). ` +
      'RL s: the RL steps alone (rollout, credit and update, summed from metrics.jsonl), mean over seeds.',
    '',
  );
  out.push(
    '| method | seeds | before RL | after RL (mean ± std) | gain | harmful calls before -> after | invalid calls | ' +
      'tokens generated / run | replays / run | all-zero groups | RL s / run | credit share of RL s | wall s / run |',
  );
  out.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const s of summaries) {
    out.push(
      `| ${s.label} | ${s.seeds.length} | ${f3(s.before)} | ${f3(s.mean)} ± ${f3(s.std)} | ` +
        `${s.gain >= 0 ? '+' : ''}${f3(s.gain)} | ${pct(s.harmfulBefore)} -> ${pct(s.harmfulAfter)} | ` +
        `${pct(s.invalidAfter)} | ${Math.round(s.generatedTokens)} | ${Math.round(s.replays)} | ` +
        `${pct(s.zeroGroupShare)} | ${Math.round(s.rlSeconds)} | ${pct(s.creditShare)} | ` +
        `${Math.round(s.wallSeconds)} |`,
    );
  }
  if (pairs.length > 0) {
    out.push('', '## Paired differences (A - B)', '');
    out.push(
      "Per (seed, test question): the difference of the two arms' accuracy on that question (mean of its samples); " +
        '95% interval from a bootstrap over seeds and questions; MDE: the smallest true difference this budget ' +
        'detects with 80% power (two-sided 5%).',
      '',
    );
    out.push('| A | B | A - B | 95% interval | MDE | seeds x questions | resolved |');
    out.push('| --- | --- | --- | --- | --- | --- | --- |');
    for (const p of pairs)
      out.push(
        `| ${p.a} | ${p.b} | ${signed(p.diff.mean)} | [${signed(p.diff.low)}, ${signed(p.diff.high)}] | ` +
          `${p.diff.mde.toFixed(3)} | ${p.diff.seeds} x ${p.diff.questions} | ${p.diff.resolved ? 'yes' : 'no'} |`,
      );
    out.push('', resolvedLine(pairs));
  }
  out.push(...worldMarkdown(summaries, runs, world));
  out.push('', '## Per-stage breakdown after RL (mean over seeds)', '');
  out.push(
    '| method | sub-question right | search retrieves support | report right | final right given right reports |',
  );
  out.push('| --- | --- | --- | --- | --- |');
  for (const s of summaries)
    out.push(
      `| ${s.label} | ${f2(s.stages.subQuestion)} | ${f2(s.stages.retrieval)} | ${f2(s.stages.report)} | ` +
        `${f2(s.stages.finalGivenReports)} |`,
    );
  out.push('', '## Runs', '');
  out.push('| method | seed | before RL [95% CI] | after RL [95% CI] | n | steps | RL s | wall s |');
  out.push('| --- | --- | --- | --- | --- | --- | --- | --- |');
  const ci = (a: AccuracyResult) =>
    `${a.accuracy.toFixed(3)} [${a.interval[0].toFixed(3)}, ${a.interval[1].toFixed(3)}]`;
  for (const r of runs)
    out.push(
      `| ${METHOD_LABELS[r.method]} | ${r.seed} | ${ci(r.before)} | ${ci(r.after)} | ${r.after.total} | ` +
        `${r.steps} | ${Math.round(r.rlSeconds)} | ${Math.round(r.wallSeconds)} |`,
    );
  out.push('');
  return out.join('\n');
}

/** Held-out accuracy against RL step: the mean over seeds per method, with a band of ± one std. */
export function ablationPlotSpec(runs: readonly RunOutcome[]): vl.TopLevelSpec {
  const values = runs.flatMap((r) =>
    r.curve.map((p) => ({ step: p.step, accuracy: p.accuracy, method: METHOD_LABELS[r.method], seed: r.seed })),
  );
  const x = { field: 'step', type: 'quantitative' as const, title: 'RL step', axis: { tickMinStep: 1, format: 'd' } };
  const color = {
    field: 'method',
    type: 'nominal' as const,
    title: null,
    legend: { orient: 'bottom' as const, columns: 2, labelLimit: 400 },
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'Held-out accuracy during RL (mean over seeds, band: ± 1 std)',
    width: 560,
    height: 300,
    background: 'white',
    data: { values },
    layer: [
      {
        mark: { type: 'errorband', extent: 'stdev', opacity: 0.2 },
        encoding: { x, y: { field: 'accuracy', type: 'quantitative', title: 'held-out accuracy' }, color },
      },
      {
        mark: { type: 'line', point: true },
        encoding: { x, y: { aggregate: 'mean', field: 'accuracy', type: 'quantitative' }, color },
      },
    ],
  };
}
