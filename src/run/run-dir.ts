import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Config } from '../config/schema.ts';
import { writeFileAtomic } from '../fs/atomic.ts';

/** `runs/<name>-<timestamp>/` with the resolved config, so every run can be reproduced. */
export function runStamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

export function createRunDir(cfg: Config, now: Date = new Date()): string {
  const dir = join(cfg.run.dir, `${cfg.run.name}-${runStamp(now)}`);
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(join(dir, 'config.yaml'), stringify(cfg));
  return dir;
}
