import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Config } from '../config/schema.ts';
import { UserError } from '../errors.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { mkdirOut } from '../fs/out-dir.ts';
import { acquireRunLock } from './run-lock.ts';

/** `runs/<name>-<timestamp>/` with the resolved config, so every run can be reproduced. */
export function runStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

/** Most suffixes tried before giving up (thousands of runs of one name in one second is a bug). */
const MAX_SUFFIX = 10_000;

/**
 * Creates a fresh run folder. The stamp has one-second resolution, so two runs of one name started
 * in the same second would collide: the folder is created exclusively (mkdir without `recursive`
 * fails with EEXIST) and a collision takes the next free `-2`, `-3`, ... suffix. No two runs ever
 * share a folder, whatever the timing. The folder is locked (run-lock.ts) before its config.yaml
 * exists, so a `--resume` of it can never slip in between.
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
    acquireRunLock(dir);
    writeFileAtomic(join(dir, 'config.yaml'), stringify(cfg));
    return dir;
  }
  throw new Error(`createRunDir: ${MAX_SUFFIX} run folders named ${base}* already exist`);
}

/** The file every run folder holds from its first moment (createRunDir writes it). */
export const RUN_CONFIG_FILE = 'config.yaml';

/**
 * Checks that `dir` is a run folder before `--resume` writes into it: a folder made by
 * createRunDir (it holds config.yaml). Any other folder (a model, an eval output, the home folder)
 * is refused with one line instead of receiving a second run's files.
 */
export function assertRunDir(dir: string): string {
  if (!existsSync(dir)) throw new UserError(`--resume: run folder not found: ${dir}`);
  if (!statSync(dir).isDirectory()) throw new UserError(`--resume: ${dir} is not a folder`);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    // Not "not a run folder": the folder may well be one that this user may not read.
    throw new UserError(
      `--resume: cannot read ${dir} (${(e as NodeJS.ErrnoException).code ?? 'error'}: permission denied or unreadable)`,
    );
  }
  if (!names.includes(RUN_CONFIG_FILE))
    throw new UserError(
      `--resume: ${dir} is not a run folder (no ${RUN_CONFIG_FILE}; only folders made by a run can be resumed)`,
    );
  return dir;
}

/**
 * The newest `<name>-<stamp>[-n]` folder under `runsDir` (by stamp, then collision suffix), or
 * undefined when there is none.
 */
export function latestRunDir(runsDir: string, name: string): string | undefined {
  if (!existsSync(runsDir)) return undefined;
  const prefix = `${name}-`;
  const runs: Array<{ dir: string; stamp: string; n: number }> = [];
  for (const d of readdirSync(runsDir, { withFileTypes: true })) {
    if (!d.isDirectory() || !d.name.startsWith(prefix)) continue;
    const m = /^(\d{8}T\d{6}Z)(?:-(\d+))?$/.exec(d.name.slice(prefix.length));
    if (m) runs.push({ dir: join(runsDir, d.name), stamp: m[1] as string, n: m[2] ? Number(m[2]) : 1 });
  }
  runs.sort((a, b) => (a.stamp === b.stamp ? a.n - b.n : a.stamp < b.stamp ? -1 : 1));
  return runs.at(-1)?.dir;
}
