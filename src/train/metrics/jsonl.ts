import { appendFileSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseJsonl } from '../../fs/jsonl.ts';
import { readTextFile } from '../../fs/read-file.ts';

/**
 * Per-step metrics as JSON lines: one object per step, `{"step": n, "time": iso,
 * ...}` with namespaced keys as cleanRL logs them (`reward/planner`, `losses/clipfrac`, `perf/tok_s`).
 * Appends are synchronous so a killed run keeps every finished step. On resume from step s the file
 * is first cut back to steps <= s (rewritten atomically: temp file + rename), so the curves of a
 * resumed run have no duplicated or orphaned steps.
 */
type MetricValue = number | string | boolean | null;
export type MetricRecord = Record<string, MetricValue>;

/** Namespaced key: segments of letters, digits, `_`, `-`, `.` joined by `/` (e.g. `reward/planner`). */
const KEY = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/;

export interface MetricsLine extends MetricRecord {
  step: number;
  time: string;
}

/** Reads a metrics file; a malformed line is a one-line error naming file and line. */
export function readMetrics(path: string): MetricsLine[] {
  return parseMetrics(readTextFile(path), path);
}

/** metrics.jsonl's text as lines; `path` names it in errors. */
export function parseMetrics(text: string, path: string): MetricsLine[] {
  // A run killed mid-append can leave a partial last line: it is skipped, but only the last one.
  return parseJsonl(text, path, { tornTail: true }).map(({ line, value }) => {
    if (typeof value !== 'object' || value === null || typeof (value as { step?: unknown }).step !== 'number') {
      throw new Error(`${path}:${line}: a metrics line needs a numeric "step"`);
    }
    return value as MetricsLine;
  });
}

export class JsonlMetrics {
  readonly path: string;

  /** Opens (creating) the file; with `resumeStep`, drops lines of later steps first. */
  constructor(path: string, opts: { resumeStep?: number } = {}) {
    this.path = path;
    mkdirSync(dirname(path), { recursive: true });
    if (opts.resumeStep !== undefined && existsSync(path)) {
      const keep = readMetrics(path).filter((m) => m.step <= (opts.resumeStep as number));
      const tmp = `${path}.tmp-${process.pid}`;
      writeFileSync(tmp, keep.map((m) => JSON.stringify(m) + '\n').join(''));
      renameSync(tmp, path);
    }
  }

  /** Appends one step. Non-finite numbers become null (JSON has no NaN); bad keys throw. */
  write(step: number, values: MetricRecord, now: Date = new Date()): void {
    if (!Number.isInteger(step) || step < 0)
      throw new Error(`metrics: step must be a non-negative integer, got ${step}`);
    const line: MetricRecord = { step, time: now.toISOString() };
    for (const [k, v] of Object.entries(values)) {
      if (!KEY.test(k)) throw new Error(`metrics: key '${k}' is not a namespaced metric name (like reward/planner)`);
      if (k === 'step' || k === 'time') throw new Error(`metrics: key '${k}' is reserved`);
      line[k] = typeof v === 'number' && !Number.isFinite(v) ? null : v;
    }
    appendFileSync(this.path, JSON.stringify(line) + '\n');
  }
}
