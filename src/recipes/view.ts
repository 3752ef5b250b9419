import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import type * as vl from 'vega-lite';
import { stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { listStepRecordsAsync, parseStepRecord, type StepRecord } from '../credit/record.ts';
import { UserError } from '../errors.ts';
import { listenPortProblem } from '../tools/retrieval/ports.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { claimOutFile, recordOutFile } from '../fs/output-guard.ts';
import { MAX_TEXT_BYTES, readRegularFileAsync } from '../fs/read-file.ts';
import { parseMetrics, type MetricsLine } from '../train/metrics/jsonl.ts';
import { CHARTS, chartPoints, chartSpec, type Point } from '../train/metrics/plot.ts';
import { builtScript } from '../view/build.ts';
import { pageHtml } from '../view/html.ts';
import { isLoopback } from '../net/loopback.ts';
import { startViewServer, type ViewServer } from '../view/server.ts';
import type { AblationView, ChartView, StepEntry, ViewBundle, ViewIndex } from '../view/types.ts';
import type { AccuracyResult } from '../eval/held-out-accuracy.ts';
import { METHOD_LABELS, ablationPlotSpec, meanOf, type MethodSummary, type RunOutcome } from '../report/ablation.ts';
import { parseSummary } from '../eval/train-summary.ts';
import type { ViewFlags } from './commands.ts';

/**
 * `sharp view RUN_DIR [--port N] [--host H] [--export FILE.html]`: what the page shows, read from the
 * run folder alone (metrics.jsonl, summary.json, trajectories/, ablation.json), and either a local
 * server on it or one self-contained HTML file.
 */

const gunzipAsync = promisify(gunzip);

/*
 * Every file the page shows is read without blocking the event loop (fs/promises, O_NONBLOCK, regular
 * files of bounded size only): a slow file holds up its own request, never the server's others.
 */

/** A run folder file's text, or undefined when there is none. */
async function readOptional(file: string): Promise<string | undefined> {
  try {
    return (await readRegularFileAsync(file, MAX_TEXT_BYTES)).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function readRecord(file: string): Promise<StepRecord> {
  const raw = await readRegularFileAsync(file, MAX_TEXT_BYTES);
  return parseStepRecord((file.endsWith('.gz') ? await gunzipAsync(raw) : raw).toString('utf8'), file);
}

const ci = (a: AccuracyResult | undefined): string =>
  a ? `${a.accuracy.toFixed(3)} [${a.interval[0].toFixed(3)}, ${a.interval[1].toFixed(3)}] (n = ${a.total})` : 'n/a';

/**
 * The overview chart specs: `sharp plot`'s charts, plus test accuracy before (step 0) and after RL, made interactive.
 */
export function overviewCharts(
  lines: readonly MetricsLine[],
  heldOut: { before?: AccuracyResult; after?: AccuracyResult; lastStep: number },
): ChartView[] {
  const out: ChartView[] = [];
  for (const c of CHARTS) {
    let points: Point[] = chartPoints(lines, c);
    if (c.name === 'accuracy') {
      const extra: Point[] = [];
      if (heldOut.before) extra.push({ step: 0, series: 'heldout/accuracy', value: heldOut.before.accuracy });
      if (heldOut.after)
        extra.push({ step: heldOut.lastStep, series: 'heldout/accuracy', value: heldOut.after.accuracy });
      const seen = new Set(points.filter((p) => p.series === 'heldout/accuracy').map((p) => p.step));
      points = [...points, ...extra.filter((p) => !seen.has(p.step))].sort((a, b) => a.step - b.step);
    }
    if (points.length === 0) continue;
    out.push({ name: c.name, title: c.title, spec: interactive(chartSpec(c.title, points, c)) });
  }
  return out;
}

/** Tooltips on the points and a legend that highlights the series clicked. */
function interactive(spec: vl.TopLevelSpec): Record<string, unknown> {
  const s = structuredClone(spec) as unknown as Record<string, unknown> & {
    mark: Record<string, unknown>;
    encoding: Record<string, unknown>;
  };
  s.mark = { ...s.mark, point: true, tooltip: true };
  s.params = [{ name: 'pick', select: { type: 'point', fields: ['series'] }, bind: 'legend' }];
  s.encoding.opacity = { condition: { param: 'pick', value: 1 }, value: 0.15 };
  return s;
}

interface AblationFile {
  complete: boolean;
  summaries: MethodSummary[];
  runs: RunOutcome[];
}

const f3 = (x: number | null): string => (x === null || Number.isNaN(x) ? '-' : x.toFixed(3));
const pct = (x: number | null): string => (x === null || Number.isNaN(x) ? '-' : `${(100 * x).toFixed(1)}%`);

/** ablation.json as the page's comparison table (the columns of ablation.md) and plot. */
export function ablationView(dir: string, a: AblationFile): AblationView {
  return {
    complete: a.complete,
    header: [
      'method',
      'seeds',
      'before RL',
      'after RL (mean ± std)',
      'gain',
      'harmful calls before -> after',
      'invalid calls',
      'tokens / run',
      'replays / run',
      'all-zero groups',
      'RL s / run',
    ],
    rows: a.summaries.map((s) => [
      s.label,
      String(s.seeds.length),
      f3(s.before),
      `${f3(s.mean)} ± ${f3(s.std)}`,
      `${s.gain >= 0 ? '+' : ''}${f3(s.gain)}`,
      `${pct(s.harmfulBefore)} -> ${pct(s.harmfulAfter)}`,
      pct(s.invalidAfter),
      String(Math.round(s.generatedTokens)),
      String(Math.round(s.replays)),
      pct(s.zeroGroupShare),
      String(Math.round(s.rlSeconds)),
    ]),
    plot: interactiveAblation(ablationPlotSpec(a.runs)),
    runs: a.runs.map((r) => ({
      method: METHOD_LABELS[r.method] ?? r.method,
      seed: r.seed,
      dir: basename(r.dir || dir),
      before: ci(r.before),
      after: ci(r.after),
    })),
  };
}

function interactiveAblation(spec: vl.TopLevelSpec): Record<string, unknown> {
  const s = structuredClone(spec) as unknown as {
    layer: { mark: Record<string, unknown>; encoding: { y: Record<string, unknown> } }[];
  } & Record<string, unknown>;
  // Accuracy is a rate: [0, 1] keeps an all-zero curve readable.
  for (const l of s.layer) l.encoding.y = { ...l.encoding.y, scale: { domain: [0, 1] } };
  const line = s.layer[1];
  if (line) line.mark = { ...line.mark, tooltip: true };
  return s;
}

/** An eval folder's headline metrics (metrics.json) and credit report (credit.json, `sharp eval --credit`). */
async function evalFacts(dir: string): Promise<[string, string][]> {
  const facts: [string, string][] = [];
  const read = async (f: string): Promise<unknown> => {
    const text = await readOptional(join(dir, f));
    return text === undefined ? undefined : JSON.parse(text);
  };
  const m = (await read('metrics.json')) as
    { benchmark?: string; episodes?: number; metrics?: Record<string, number> } | undefined;
  if (m?.metrics)
    facts.push([
      `eval ${m.benchmark ?? ''} (${m.episodes ?? '?'} episodes)`.trim(),
      Object.entries(m.metrics)
        .map(([k, v]) => `${k} ${f3(v)}`)
        .join(', '),
    ]);
  const c = (await read('credit.json')) as
    { workerCalls?: number; helpful?: number; neutral?: number; harmful?: number } | undefined;
  if (c?.workerCalls !== undefined)
    facts.push([
      'worker calls (LOO)',
      `helpful ${pct(c.helpful ?? null)}, neutral ${pct(c.neutral ?? null)}, harmful ${pct(c.harmful ?? null)} (n ` +
        `= ${c.workerCalls})`,
    ]);
  return facts;
}

/**
 * Entries by file, kept while the file's size and mtime stay (a live run's index is asked for often; records are
 * written whole, never edited).
 */
const entryCache = new Map<string, { key: string; entry: StepEntry }>();

/**
 * The index entries of the step records, and the records that could not be read (a torn or corrupt
 * .json.gz, a file removed while listing), each as `file: reason`: one bad record costs its own
 * entry, never the whole index.
 */
async function stepEntries(dir: string): Promise<{ entries: StepEntry[]; skipped: string[] }> {
  const entries: StepEntry[] = [];
  const skipped: string[] = [];
  for (const file of await listStepRecordsAsync(dir)) {
    try {
      const st = await stat(file);
      const key = `${st.size}:${st.mtimeMs}`;
      const hit = entryCache.get(file);
      if (hit?.key === key) {
        entries.push(hit.entry);
        continue;
      }
      const rec = await readRecord(file);
      const entry: StepEntry = {
        name: basename(file).replace(/\.json(\.gz)?$/, ''),
        kind: rec.kind,
        step: rec.step,
        groups: rec.groups.length,
        groupsTotal: rec.groupsTotal,
      };
      entryCache.set(file, { key, entry });
      entries.push(entry);
    } catch (err) {
      entryCache.delete(file);
      skipped.push(`${relative(dir, file)}: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
    }
  }
  return { entries, skipped };
}

/** Everything the page shows of a run folder (re-read on every call: a live run gains steps). */
export async function viewIndex(dir: string): Promise<ViewIndex> {
  const metricsFile = join(dir, 'metrics.jsonl');
  const metricsText = await readOptional(metricsFile);
  const lines = metricsText === undefined ? [] : parseMetrics(metricsText, metricsFile);
  const summaryFile = join(dir, 'summary.json');
  const summaryText = await readOptional(summaryFile);
  const summary = summaryText === undefined ? undefined : parseSummary(summaryText, summaryFile);
  const facts: [string, string][] = [];
  if (summary?.heldOutBefore) facts.push([`test accuracy, ${summary.beforeLabel}`, ci(summary.heldOutBefore)]);
  if (summary?.heldOutAfterRl) facts.push(['test accuracy, after RL', ci(summary.heldOutAfterRl)]);
  const lastStep = summary?.rlSteps ?? lines.at(-1)?.step ?? 0;
  if (lines.length > 0) facts.push(['RL steps logged', String(lines.length)]);
  const wc = summary?.heldOutAfterRl?.workerCalls;
  if (wc)
    facts.push([
      'held-out worker calls after RL',
      `helpful ${pct(wc.helpful)}, neutral ${pct(wc.neutral)}, harmful ${pct(wc.harmful)} (n = ` +
        `${wc.n})${wc.noiseFloor !== undefined ? `; replay noise floor ${pct(wc.noiseFloor)}` : ''}`,
    ]);
  const overSteps = (key: string): number | null =>
    meanOf(lines.map((l) => (typeof l[key] === 'number' ? l[key] : null)));
  const floor = overSteps('credit/noise_floor');
  if (floor !== null)
    facts.push([
      'counterfactual credit during RL (mean over steps)',
      `noise floor ${pct(floor)}; worker calls with non-zero credit: ${pct(overSteps('credit/nonzero_success'))} ` +
        `in successes, ${pct(overSteps('credit/nonzero_failure'))} in failures`,
    ]);
  facts.push(...(await evalFacts(dir)));
  const { entries: steps, skipped } = await stepEntries(dir);
  if (skipped.length > 0) facts.push([`unreadable step records (skipped)`, skipped.join('; ')]);
  const index: ViewIndex = {
    version: 1,
    title: basename(resolve(dir)),
    facts,
    charts: overviewCharts(lines, { before: summary?.heldOutBefore, after: summary?.heldOutAfterRl, lastStep }),
    steps,
    ...(skipped.length > 0 ? { skipped } : {}),
  };
  const ablationText = await readOptional(join(dir, 'ablation.json'));
  if (ablationText !== undefined) index.ablation = ablationView(dir, JSON.parse(ablationText) as AblationFile);
  return index;
}

async function stepRecord(dir: string, name: string): Promise<StepRecord | undefined> {
  const file = (await listStepRecordsAsync(dir)).find((f) => basename(f).replace(/\.json(\.gz)?$/, '') === name);
  return file ? readRecord(file) : undefined;
}

/** The exported file's data: the index and every recorded step. */
export async function viewBundle(dir: string): Promise<ViewBundle> {
  const index = await viewIndex(dir);
  const steps: Record<string, StepRecord> = {};
  for (const s of index.steps) {
    const rec = await stepRecord(dir, s.name);
    if (rec) steps[s.name] = rec;
  }
  return { index, steps };
}

export function checkRunDir(dir: string): void {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new Error(`${dir} is not a folder`);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    throw new Error(
      `cannot read ${dir} (${(e as NodeJS.ErrnoException).code ?? 'error'}: permission denied or unreadable)`,
    );
  }
  const known = ['metrics.jsonl', 'summary.json', 'ablation.json', 'trajectories', 'credit.log.jsonl'];
  if (known.some((f) => names.includes(f))) return;
  // An eval folder holds predictions and metrics; its trajectories are recorded only with --credit.
  if (names.includes('eval-setup.json'))
    throw new Error(
      `${dir} is an eval folder without recorded trajectories: run the eval with --credit to view its ` +
        `trajectories and credit (its metrics are in metrics.json and report.md)`,
    );
  throw new Error(`${dir} is not a run folder (no metrics.jsonl, summary.json, trajectories/ or ablation.json)`);
}

/** Writes one self-contained HTML file (script and data inlined) atomically; returns its size in bytes. */
export async function exportView(dir: string, file: string): Promise<number> {
  checkRunDir(dir);
  const html = pageHtml({ script: builtScript(), bundle: await viewBundle(dir) });
  writeFileAtomic(file, html);
  return Buffer.byteLength(html);
}

export function serveView(dir: string, o: { host: string; port: number }): Promise<ViewServer> {
  checkRunDir(dir);
  return startViewServer({
    root: dir,
    host: o.host,
    port: o.port,
    script: builtScript(),
    index: () => viewIndex(dir),
    step: (name) => stepRecord(dir, name),
  });
}

/**
 * The command: serves the page on 127.0.0.1 (or --host) until Ctrl-C, or writes one self-contained HTML file with
 * --export.
 */
export async function run(opts: ViewFlags): Promise<void> {
  try {
    checkRunDir(opts.runDir);
  } catch (err) {
    throw new UserError(`sharp view: ${(err as Error).message}`);
  }
  const { port } = opts;
  // A browser refuses the Fetch standard's bad ports as Node's fetch does: the page would never load.
  const portProblem = listenPortProblem(port);
  if (portProblem !== null) throw new UserError(`sharp view: --port ${portProblem}`);
  if (opts.export !== undefined) {
    if (existsSync(opts.export) && statSync(opts.export).isDirectory())
      throw new UserError(`sharp view --export: ${opts.export} is a folder (give a file name, e.g. run.html)`);
    const file = claimOutFile(opts.export, { command: 'view', flag: 'sharp view --export', force: opts.force });
    let bytes: number;
    try {
      bytes = await exportView(opts.runDir, file);
    } catch (err) {
      throw new UserError(`sharp view --export: ${(err as Error).message.split('\n')[0]}`);
    }
    recordOutFile(file, 'view');
    process.stdout.write(`${opts.export} (${(bytes / 1024).toFixed(0)} KiB; opens without a server)\n`);
    return;
  }
  let server: ViewServer;
  try {
    server = await serveView(opts.runDir, { host: opts.host ?? '127.0.0.1', port });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE') throw new UserError(`sharp view: port ${port} is in use (pick another with --port)`);
    throw new UserError(`sharp view: ${e.message.split('\n')[0]}`);
  }
  process.stdout.write(`sharp view: ${server.url}  (Ctrl-C to stop)\n`);
  if (opts.host !== undefined && !isLoopback(opts.host))
    process.stderr.write(`sharp view: bound to ${opts.host}: anyone who can reach this address can read the run\n`);
  await new Promise<void>((done) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void server.close().then(done);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
