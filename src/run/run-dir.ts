import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Config } from '../config/schema.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { mkdirOut } from '../fs/out-dir.ts';

/** `runs/<name>-<timestamp>/` with the resolved config, so every run can be reproduced. */
export function runStamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/** Most suffixes tried before giving up (thousands of runs of one name in one second is a bug). */
const MAX_SUFFIX = 10_000;

/**
 * Creates a fresh run folder. The stamp has one-second resolution, so two runs of one name started
 * in the same second would collide: the folder is created exclusively (mkdir without `recursive`
 * fails with EEXIST) and a collision takes the next free `-2`, `-3`, ... suffix. No two runs ever
 * share a folder, whatever the timing.
 */
export function createRunDir(cfg: Config, now: Date = new Date()): string {
  mkdirOut(cfg.run.dir, 'run.dir');
  const base = join(cfg.run.dir, `${cfg.run.name}-${runStamp(now)}`);
  for (let n = 1; n <= MAX_SUFFIX; n++) {
    const dir = n === 1 ? base : `${base}-${n}`;
    try {
      mkdirSync(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw e;
    }
    writeFileAtomic(join(dir, 'config.yaml'), stringify(cfg));
    return dir;
  }
  throw new Error(`createRunDir: ${MAX_SUFFIX} run folders named ${base}* already exist`);
}
