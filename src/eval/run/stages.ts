import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { readJsonl } from '../../fs/jsonl.ts';
import { dropTornTail } from '../../fs/torn-tail.ts';
import type { StageBreakdown } from '../breakdown.ts';

/**
 * The per-stage breakdown of `sharp eval`, kept per episode as one JSONL line (`stages.log.jsonl`)
 * beside the predictions, so an interrupted eval resumes with the stages of what it already ran.
 * A kill can tear only the last line, which is cut on open.
 */
export class StageLog {
  private readonly byKey = new Map<string, StageBreakdown>();

  private constructor(readonly file: string) {}

  static open(file: string): StageLog {
    const log = new StageLog(file);
    mkdirSync(dirname(file), { recursive: true });
    if (!existsSync(file)) return log;
    dropTornTail(file);
    for (const { value } of readJsonl(file)) {
      const { key, stages } = value as { key: string; stages: StageBreakdown };
      log.byKey.set(key, stages);
    }
    return log;
  }

  append(key: string, stages: StageBreakdown): void {
    appendFileSync(this.file, `${JSON.stringify({ key, stages })}\n`);
    this.byKey.set(key, stages);
  }

  /** The breakdowns of `keys` that were recorded (episodes run before stages were kept are absent). */
  collect(keys: readonly string[]): StageBreakdown[] {
    return keys.flatMap((k) => {
      const b = this.byKey.get(k);
      return b ? [b] : [];
    });
  }
}
