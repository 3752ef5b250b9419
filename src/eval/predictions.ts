/**
 * Resumable predictions ("an interrupted eval resumes and skips ids already predicted").
 * Each finished episode is appended as one line to a log; a kill can only tear the last line, which
 * is ignored on resume. At the end the official-format file is written atomically in gold order.
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { Episode } from '../data/episode.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { readJsonl } from '../fs/jsonl.ts';
import { dropTornTail } from '../fs/torn-tail.ts';
import type { Benchmark, Prediction } from './types.ts';

/**
 * Stable key per episode: its id, plus `#k` for the k-th repeat of an id (MuSiQue full holds each
 * question twice under one id, answerable then unanswerable, in a fixed order).
 */
export function episodeKeys(eps: readonly Episode[]): string[] {
  const seen = new Map<string, number>();
  return eps.map((ep) => {
    const k = seen.get(ep.id) ?? 0;
    seen.set(ep.id, k + 1);
    return k === 0 ? ep.id : `${ep.id}#${k}`;
  });
}

const logLineSchema = z.object({
  key: z.string(),
  id: z.string(),
  answer: z.string(),
  supportIdx: z.array(z.number().int()),
  answerable: z.boolean(),
  retrievedIdx: z.array(z.number().int()).optional(),
  trace: z.string().optional(),
});

export class PredictionLog {
  private readonly done = new Map<string, Prediction>();

  private constructor(readonly file: string) {}

  /** Opens (or starts) the log at `file`, reading what an earlier run recorded. */
  static open(file: string): PredictionLog {
    const log = new PredictionLog(file);
    mkdirSync(dirname(file), { recursive: true });
    if (!existsSync(file)) return log;
    // A kill mid-append leaves a torn last line: cut it, or the next append would be glued onto it.
    dropTornTail(file);
    // A torn last line is skipped: that episode simply runs again.
    for (const { line, value } of readJsonl(file, { tornTail: true })) {
      const r = logLineSchema.safeParse(value);
      if (!r.success)
        throw new Error(
          `${file}:${line}: ${r.error.issues[0].path.join('.') || '(record)'}: ${r.error.issues[0].message}`,
        );
      const { key, ...pred } = r.data;
      log.done.set(key, pred);
    }
    return log;
  }

  has(key: string): boolean {
    return this.done.has(key);
  }

  get(key: string): Prediction | undefined {
    return this.done.get(key);
  }

  get size(): number {
    return this.done.size;
  }

  /** Records one finished episode (one appended line). */
  append(key: string, pred: Prediction): void {
    const line = JSON.stringify({ key, ...pred });
    appendFileSync(this.file, `${line}\n`);
    this.done.set(key, pred);
  }

  /** Predictions aligned with `eps`, or the keys still missing. */
  collect(eps: readonly Episode[]): { preds: Prediction[]; missing: string[] } {
    const keys = episodeKeys(eps);
    const preds: Prediction[] = [];
    const missing: string[] = [];
    keys.forEach((k) => {
      const p = this.done.get(k);
      if (p) preds.push(p);
      else missing.push(k);
    });
    return { preds, missing };
  }
}

/**
 * Writes the official predictions file (and, where the benchmark has an offline evaluator, the gold
 * records of exactly these episodes) into `outDir`, atomically. Returns the paths written.
 */
export function writeOfficialPredictions(
  bench: Benchmark,
  outDir: string,
  eps: readonly Episode[],
  preds: readonly Prediction[],
  sourceFile?: string,
): { predictions: string; gold?: string } {
  mkdirSync(outDir, { recursive: true });
  const predictions = join(outDir, bench.predictionsFile);
  writeFileAtomic(predictions, bench.formatPredictions(preds, eps));
  if (!bench.goldSubset || sourceFile === undefined) return { predictions };
  const gold = join(outDir, bench.goldSubset.file);
  writeFileAtomic(gold, bench.goldSubset.text(sourceFile, eps));
  return { predictions, gold };
}
