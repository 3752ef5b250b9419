import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { readTextFile } from '../fs/read-file.ts';
import type { AccuracyResult } from './held-out-accuracy.ts';

/**
 * What `sharp train` leaves in the run folder besides metrics and checkpoints:
 * `summary.json` with the held-out accuracy before RL (after SFT when it ran) and after RL, and
 * the seconds each stage took. Written atomically after every stage, so a resumed run reads back
 * what an earlier process measured (e.g. the SFT-only accuracy) instead of measuring it again.
 */
export const SUMMARY_FILE = 'summary.json';

export interface TrainSummary {
  /** 'SFT only' when an SFT stage ran, else 'before RL'. */
  beforeLabel: string;
  heldOutBefore?: AccuracyResult;
  heldOutAfterRl?: AccuracyResult;
  rlSteps?: number;
  resumedFrom?: number;
  stopped?: boolean;
  /** Seconds per stage (data, expert, init, sft, eval_before, rl, eval_after). */
  stages: Record<string, number>;
  /** Extra facts per stage (sft first/last loss, expert solved, model parameters). */
  info: Record<string, number | string>;
}

export function readSummary(runDir: string): TrainSummary | undefined {
  const file = join(runDir, SUMMARY_FILE);
  if (!existsSync(file)) return undefined;
  let text: string;
  try {
    text = readTextFile(file);
  } catch (err) {
    throw new UserError(`${file}: cannot read the run summary (${(err as Error).message.split('\n')[0]})`);
  }
  return parseSummary(text, file);
}

/** summary.json's text, checked; `file` names it in errors. */
export function parseSummary(text: string, file: string): TrainSummary {
  let s: unknown;
  try {
    s = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${file}: cannot read the run summary (${(err as Error).message.split('\n')[0]})`);
  }
  const bad = summaryProblem(s);
  if (bad !== undefined) throw new UserError(`${file}: damaged run summary (${bad})`);
  return s as TrainSummary;
}

/** What makes a parsed summary.json unusable, or undefined: the fields readers do arithmetic on. */
function summaryProblem(s: unknown): string | undefined {
  if (s === null || typeof s !== 'object' || Array.isArray(s)) return 'not a JSON object';
  const o = s as Record<string, unknown>;
  for (const k of ['heldOutBefore', 'heldOutAfterRl']) {
    const a = o[k];
    if (a === undefined) continue;
    if (
      a === null ||
      typeof a !== 'object' ||
      typeof (a as Record<string, unknown>).accuracy !== 'number' ||
      typeof (a as Record<string, unknown>).total !== 'number'
    )
      return `${k} has no numeric accuracy and total`;
  }
  if (o.stages === null || typeof o.stages !== 'object' || Object.values(o.stages).some((v) => typeof v !== 'number'))
    return 'stages must map names to seconds';
  return undefined;
}

export function writeSummary(runDir: string, s: TrainSummary): void {
  writeFileAtomic(join(runDir, SUMMARY_FILE), `${JSON.stringify(s, null, 2)}\n`);
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/**
 * The lines the quickstart prints, e.g.
 *   test accuracy: SFT only 0.42 [0.36, 0.48] -> after RL 0.55 [0.49, 0.61] (n = 150 questions x 4 samples, temperature
 * 1) harmful worker calls: 6.1% -> 3.2% (LOO replays); invalid tool calls: 0.4% -> 0.2%
 */
export function accuracyLine(s: TrainSummary): string {
  const b = s.heldOutBefore;
  const a = s.heldOutAfterRl;
  const fmt = (r: AccuracyResult | undefined): string =>
    r ? `${r.accuracy.toFixed(2)} [${r.interval[0].toFixed(2)}, ${r.interval[1].toFixed(2)}]` : 'n/a';
  const n = a?.total ?? b?.total ?? 0;
  const k = a?.samples ?? b?.samples ?? 1;
  const t = a?.temperature ?? b?.temperature ?? 0;
  const size = k > 1 ? `n = ${n / k} questions x ${k} samples` : `n = ${n}`;
  const lines = [
    `test accuracy: ${s.beforeLabel} ${fmt(b)} -> after RL ${fmt(a)} (${size}, ` +
      `${t === 0 ? 'greedy' : `temperature ${t}`})`,
  ];
  const rate = (r: AccuracyResult | undefined, f: (x: AccuracyResult) => number | undefined): string => {
    const v = r ? f(r) : undefined;
    return v === undefined ? 'n/a' : pct(v);
  };
  const parts: string[] = [];
  if (b?.workerCalls || a?.workerCalls)
    parts.push(
      `harmful worker calls: ${rate(b, (x) => x.workerCalls?.harmful)} -> ` +
        `${rate(a, (x) => x.workerCalls?.harmful)} (LOO replays)`,
    );
  parts.push(
    `invalid tool calls: ${rate(b, (x) => x.breakdown.invalidCalls.rate ?? 0)} -> ` +
      `${rate(a, (x) => x.breakdown.invalidCalls.rate ?? 0)}`,
  );
  lines.push(parts.join('; '));
  return lines.join('\n');
}
