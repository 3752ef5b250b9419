import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vl from 'vega-lite';
import * as vega from 'vega';
import { Resvg } from '@resvg/resvg-js';
import { readMetrics, type MetricsLine } from './jsonl.ts';

/**
 * `sharp plot RUN_DIR`: training curves from RUN_DIR/metrics.jsonl rendered to PNG
 * fully offline: vega-lite spec -> vega (renderer 'none', SVG string, no canvas or DOM) ->
 * @resvg/resvg-js (Rust SVG rasteriser, system fonts, nothing downloaded).
 * One PNG per chart whose metrics are present; a chart's series are every metric key it matches.
 */
export interface ChartDef {
  name: string;
  title: string;
  /** Which metric keys belong to the chart (one line per key). */
  match: (key: string) => boolean;
  /** Rates in [0, 1]: the y axis spans [0, 1] (a constant 0 still gets a readable axis). */
  fraction?: boolean;
  /** Fixed colours per series (helpful green, harmful red). */
  colors?: Record<string, string>;
}

/** The charts `sharp plot` draws, by the namespaced keys the trainer logs. */
export const CHARTS: readonly ChartDef[] = [
  { name: 'reward', title: 'Reward per role', match: (k) => /^reward\/(planner|worker)$/.test(k) },
  // Unweighted parts of the per-agent reward (credit/reward.ts): broadcast, marginal, tool, per role.
  {
    name: 'reward-parts',
    title: 'Reward parts per role',
    match: (k) => /^reward\/(broadcast|marginal|tool)\/(planner|worker)$/.test(k),
  },
  { name: 'accuracy', title: 'Accuracy', match: (k) => k === 'accuracy' || k.endsWith('/accuracy'), fraction: true },
  // credit/<role>: mean marginal (SHARP LOO / Shapley) credit per role, from grpo/advantages.ts rewardMetrics.
  { name: 'credit', title: 'Credit per role', match: (k) => /^credit\/(planner|worker)$/.test(k) },
  // Fractions of worker calls with Delta > 0, = 0, < 0 (SHARP's analysis; credit/report.ts).
  {
    name: 'worker-calls',
    title: 'Worker calls: helpful / neutral / harmful',
    match: (k) => /^credit\/(helpful|neutral|harmful)$/.test(k),
    fraction: true,
    colors: { 'credit/helpful': '#2e7d32', 'credit/neutral': '#9e9e9e', 'credit/harmful': '#c0392b' },
  },
  // How much of the counterfactual credit is signal: the replay noise floor (full-coalition replays that
  // disagree with the recorded outcome) beside the share of worker calls with non-zero credit (credit/report.ts).
  {
    name: 'credit-signal',
    title: 'Counterfactual credit: noise floor and non-zero credit',
    match: (k) => /^credit\/(noise_floor|nonzero_success|nonzero_failure)$/.test(k),
    fraction: true,
  },
  {
    name: 'invalid-calls',
    title: 'Invalid tool calls (fraction of calls)',
    match: (k) => k === 'rollout/invalid_calls',
    fraction: true,
  },
];

export interface Point {
  step: number;
  series: string;
  value: number;
}

/** Long-form points of the keys a chart matches (finite numbers only). */
export function chartPoints(lines: readonly MetricsLine[], chart: ChartDef): Point[] {
  const out: Point[] = [];
  for (const line of lines) {
    for (const [k, v] of Object.entries(line)) {
      if (chart.match(k) && typeof v === 'number' && Number.isFinite(v))
        out.push({ step: line.step, series: k, value: v });
    }
  }
  return out;
}

export function chartSpec(
  title: string,
  points: readonly Point[],
  chart?: Pick<ChartDef, 'fraction' | 'colors'>,
): vl.TopLevelSpec {
  const series = [...new Set(points.map((p) => p.series))];
  const colors = chart?.colors;
  const scale =
    colors && series.every((s) => s in colors) ? { domain: series, range: series.map((s) => colors[s]) } : undefined;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width: 560,
    height: 280,
    background: 'white',
    data: { values: [...points] },
    mark: { type: 'line', point: points.length <= 200 },
    encoding: {
      // Steps are whole numbers: no 1.5 ticks between two steps.
      x: { field: 'step', type: 'quantitative', title: 'step', axis: { tickMinStep: 1, format: 'd' } },
      y: {
        field: 'value',
        type: 'quantitative',
        title: null,
        ...(chart?.fraction ? { scale: { domain: [0, 1] } } : {}),
      },
      // Below the plot and without vega's 160 px label limit, so long metric names are not cut off.
      color: {
        field: 'series',
        type: 'nominal',
        title: null,
        legend: { orient: 'bottom', columns: 2, labelLimit: 0 },
        ...(scale ? { scale } : {}),
      },
    },
  };
}

/** vega-lite spec -> SVG text (no canvas or DOM). */
export async function renderSvg(spec: vl.TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** vega-lite spec -> PNG bytes. */
export async function renderPng(spec: vl.TopLevelSpec): Promise<Uint8Array> {
  const svg = await renderSvg(spec);
  return new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' }, background: 'white' })
    .render()
    .asPng();
}

export interface PlotResult {
  chart: string;
  file: string;
  series: string[];
  points: number;
}

/**
 * Renders every chart with data from `<runDir>/metrics.jsonl` into `outDir` (default
 * `<runDir>/plots`), each PNG written atomically. Throws a one-line error when the file is missing
 * or holds none of the charted metrics.
 */
export async function plotRun(runDir: string, outDir: string = join(runDir, 'plots')): Promise<PlotResult[]> {
  const file = join(runDir, 'metrics.jsonl');
  if (!existsSync(file)) throw new Error(`plot: ${file} does not exist (is ${runDir} a run folder?)`);
  const lines = readMetrics(file);
  const results: PlotResult[] = [];
  for (const chart of CHARTS) {
    const points = chartPoints(lines, chart);
    if (points.length === 0) continue;
    mkdirSync(outDir, { recursive: true });
    const png = await renderPng(chartSpec(chart.title, points, chart));
    const out = join(outDir, `${chart.name}.png`);
    const tmp = `${out}.tmp-${process.pid}`;
    writeFileSync(tmp, png);
    renameSync(tmp, out);
    results.push({
      chart: chart.name,
      file: out,
      series: [...new Set(points.map((p) => p.series))],
      points: points.length,
    });
  }
  if (results.length === 0) throw new Error(`plot: ${file} has no reward/*, accuracy or credit/* metrics to plot`);
  return results;
}
