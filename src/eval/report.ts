/**
 * metrics.json and report.md of an eval run: the official numbers, then breakdowns
 * (MuSiQue by hop count, HotpotQA by type and level, FRAMES by reasoning type, ...). Pure apart from
 * `writeReport`, which writes both files atomically.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Episode } from '../data/episode.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { breakdown, type Breakdown } from './scores.ts';
import { checkAligned, type Benchmark, type Prediction } from './types.ts';

export interface EvalReport {
  benchmark: string;
  data: string;
  episodes: number;
  /** Official numbers, as the benchmark's script prints them. */
  metrics: Record<string, number>;
  /** The headline metric's key in `metrics`. */
  headline: string;
  /**
   * Retrieval metrics beside the official ones (`recall@k` of the supporting paragraphs, recall.ts), where the
   * benchmark has gold support.
   */
  retrieval?: Record<string, number>;
  breakdown: Breakdown;
  /** Run settings worth keeping beside the numbers (model, agents, limit, seed). */
  settings: Record<string, string | number | boolean>;
}

export function buildReport(
  bench: Benchmark,
  dataFile: string,
  eps: readonly Episode[],
  preds: readonly Prediction[],
  settings: Record<string, string | number | boolean> = {},
): EvalReport {
  checkAligned(preds, eps);
  const items = preds.map((p, i) => bench.score(p, eps[i]));
  return {
    benchmark: bench.name,
    data: dataFile,
    episodes: eps.length,
    metrics: bench.aggregate(preds, eps),
    headline: bench.headline,
    breakdown: breakdown(items, eps, (ep) => bench.groups(ep)),
    settings,
  };
}

const fmt = (v: number): string => (Number.isInteger(v) ? String(v) : v.toFixed(3));

/** The markdown report; `extra` sections (e.g. the credit report) are appended as given. */
export function renderMarkdown(r: EvalReport, extra: readonly string[] = []): string {
  const out: string[] = [`# ${r.benchmark} evaluation`, '', `- data: \`${r.data}\``, `- episodes: ${r.episodes}`];
  for (const [k, v] of Object.entries(r.settings)) out.push(`- ${k}: ${String(v)}`);
  out.push('', '## Official metrics', '', '| metric | value |', '| --- | --- |');
  for (const [k, v] of Object.entries(r.metrics)) out.push(`| ${k === r.headline ? `**${k}**` : k} | ${fmt(v)} |`);
  if (r.retrieval) {
    out.push('', '## Retrieval', '', '| metric | value |', '| --- | --- |');
    for (const [k, v] of Object.entries(r.retrieval)) out.push(`| ${k} | ${fmt(v)} |`);
  }
  for (const [dim, rows] of Object.entries(r.breakdown)) {
    const keys = [...new Set(rows.flatMap((row) => Object.keys(row.means)))];
    out.push(
      '',
      `## By ${dim.replace(/_/g, ' ')}`,
      '',
      `| ${dim} | n | ${keys.join(' | ')} |`,
      `| --- | --- |${keys.map(() => ' --- |').join('')}`,
    );
    for (const row of rows)
      out.push(
        `| ${row.group} | ${row.count} | ` +
          `${keys.map((k) => (row.means[k] === undefined ? '-' : fmt(row.means[k]))).join(' | ')} |`,
      );
  }
  if (Object.keys(r.breakdown).length > 0)
    out.push('', 'Breakdown cells are per-item means of the same metric functions, shown to 3 places.');
  for (const section of extra) out.push('', section.trimEnd());
  return out.join('\n') + '\n';
}

/** Writes metrics.json and report.md into `outDir`; returns their paths. */
export function writeReport(
  outDir: string,
  r: EvalReport,
  extra: readonly string[] = [],
): { metrics: string; report: string } {
  mkdirSync(outDir, { recursive: true });
  const metrics = join(outDir, 'metrics.json');
  const report = join(outDir, 'report.md');
  writeFileAtomic(metrics, JSON.stringify(r, null, 2) + '\n');
  writeFileAtomic(report, renderMarkdown(r, extra));
  return { metrics, report };
}
