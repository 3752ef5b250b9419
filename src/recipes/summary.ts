import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../fs/atomic.ts';
import type { AccuracyResult } from './accuracy.ts';

/**
 * What `sharp train` leaves in the run folder besides metrics and checkpoints (issue 6 item 7):
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
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as TrainSummary;
  } catch (err) {
    throw new Error(`${file}: cannot read the run summary (${(err as Error).message.split('\n')[0]})`);
  }
}

export function writeSummary(runDir: string, s: TrainSummary): void {
  writeFileAtomic(join(runDir, SUMMARY_FILE), `${JSON.stringify(s, null, 2)}\n`);
}

/** The line the quickstart prints: "held-out accuracy: SFT only 0.42 -> after RL 0.50 (n = 100)". */
export function accuracyLine(s: TrainSummary): string {
  const fmt = (a: AccuracyResult | undefined): string => (a ? a.accuracy.toFixed(2) : 'n/a');
  const n = s.heldOutAfterRl?.total ?? s.heldOutBefore?.total ?? 0;
  return `held-out accuracy: ${s.beforeLabel} ${fmt(s.heldOutBefore)} -> after RL ${fmt(s.heldOutAfterRl)} (n = ${n})`;
}
