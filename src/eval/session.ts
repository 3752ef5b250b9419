/**
 * Everything `sharp eval` does around running the agents: pick the benchmark and its file
 * (the shipped sample by default), take the first --limit episodes, resume from the prediction log,
 * and at the end write the official predictions, the gold subset, metrics.json and report.md.
 * The command itself only loops over `pending` and calls `record` with each prediction.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { Episode } from '../data/episode.ts';
import { BenchmarkFormatError } from '../data/readers/records.ts';
import { getBenchmark } from './benchmarks.ts';
import { PredictionLog, episodeKeys, writeOfficialPredictions } from './predictions.ts';
import { supportRecall } from './recall.ts';
import { buildReport, writeReport, type EvalReport } from './report.ts';
import type { Benchmark, Prediction } from './types.ts';

export interface EvalSessionOptions {
  bench: string;
  /** Benchmark file; '' or undefined = the shipped sample. */
  data?: string;
  /** First n episodes; 0 or undefined = all. */
  limit?: number;
  out: string;
  /** Repository root, for the shipped samples. */
  repoRoot: string;
}

export interface EvalSession {
  bench: Benchmark;
  dataFile: string;
  episodes: Episode[];
  keys: string[];
  log: PredictionLog;
  outDir: string;
  /** Episodes (with their keys) not yet predicted: what a resumed run still has to do. */
  pending(): Array<{ key: string; episode: Episode }>;
  record(key: string, pred: Prediction): void;
}

/**
 * The first `limit` episodes, extended so that a run of equal ids (MuSiQue full: the answerable
 * and unanswerable versions) is never cut in two: the official evaluator needs both.
 */
export function limitEpisodes(eps: readonly Episode[], limit: number | undefined): Episode[] {
  if (!limit || limit >= eps.length) return [...eps];
  let n = limit;
  while (n < eps.length && eps[n].id === eps[n - 1].id) n += 1;
  return eps.slice(0, n);
}

/**
 * The first `limit` episodes (limitEpisodes) without reading the whole file: `limit` records; where
 * ids repeat (MuSiQue), limit + 1, and while a run of equal ids may continue past what was read,
 * twice as many. A 100 MB file with --limit 2 costs two or three records, not the file.
 */
export function readLimited(bench: Benchmark, file: string, limit: number | undefined): Episode[] {
  if (!limit) return bench.read(file);
  // Without repeated ids no run can continue past the limit: nothing to peek at.
  if (!bench.repeatsIds) return bench.read(file, limit);
  for (let max = limit + 1; ; max *= 2) {
    const eps = bench.read(file, max);
    const cut = limitEpisodes(eps, limit);
    // Exhausted (fewer than asked) or cut before the end of what was read: the cut is final.
    if (eps.length < max || cut.length < eps.length) return cut;
  }
}

/** The file an evaluation reads: `data` (relative to the working folder), else the benchmark's shipped sample. */
export function benchmarkFile(bench: Benchmark, data: string | undefined, repoRoot: string): string {
  return data ? (isAbsolute(data) ? data : resolve(data)) : join(repoRoot, bench.sample);
}

export function openEvalSession(o: EvalSessionOptions): EvalSession {
  const bench = getBenchmark(o.bench);
  const dataFile = benchmarkFile(bench, o.data, o.repoRoot);
  if (!existsSync(dataFile)) throw new BenchmarkFormatError(`${dataFile}: benchmark file not found (--data)`);
  if (o.limit !== undefined && (!Number.isInteger(o.limit) || o.limit < 0))
    throw new BenchmarkFormatError(`--limit: expected a non-negative integer, got ${o.limit}`);
  const episodes = readLimited(bench, dataFile, o.limit);
  if (episodes.length === 0)
    throw new BenchmarkFormatError(`${dataFile}: no records (an empty benchmark file has nothing to score)`);
  const keys = episodeKeys(episodes);
  const log = PredictionLog.open(join(o.out, 'predictions.log.jsonl'));
  return {
    bench,
    dataFile,
    episodes,
    keys,
    log,
    outDir: o.out,
    pending: () => episodes.map((episode, i) => ({ key: keys[i], episode })).filter(({ key }) => !log.has(key)),
    record: (key, pred) => log.append(key, pred),
  };
}

export interface EvalResult {
  report: EvalReport;
  files: { predictions: string; gold?: string; metrics: string; report: string };
}

/**
 * Writes the official predictions (+ gold subset) and the report. Where the benchmark has a ported
 * file evaluator, the printed metrics are computed from the written files, as the official script
 * would compute them. With `searchTopK`, `recall@<k>` of the supporting paragraphs (recall.ts) goes
 * beside them (`retrieval` in metrics.json) where the benchmark has gold support.
 */
export function finishEvalSession(
  s: EvalSession,
  settings: Record<string, string | number | boolean> = {},
  extraMarkdown: readonly string[] = [],
  searchTopK?: number,
): EvalResult {
  const { preds, missing } = s.log.collect(s.episodes);
  if (missing.length > 0)
    throw new Error(`eval: ${missing.length} episode(s) have no prediction yet (first: ${missing[0]})`);
  const written = writeOfficialPredictions(s.bench, s.outDir, s.episodes, preds, s.dataFile);
  const report = buildReport(s.bench, s.dataFile, s.episodes, preds, settings);
  if (s.bench.scoreFiles && written.gold) report.metrics = s.bench.scoreFiles(written.gold, written.predictions);
  const recall = searchTopK === undefined ? null : supportRecall(preds, s.episodes);
  if (recall !== null) report.retrieval = { [`recall@${searchTopK}`]: Math.round(recall * 1000) / 1000 };
  const files = writeReport(s.outDir, report, extraMarkdown);
  return { report, files: { ...written, ...files } };
}
