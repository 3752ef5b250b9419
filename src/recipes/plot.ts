/**
 * `sharp plot RUN_DIR [--out DIR]`: renders reward / accuracy / credit-per-role curves of a run to PNG.
 *
 * export const options (for the lead to wire in src/cli/main.ts):
 *   argument  <runDir>       run folder holding metrics.jsonl   -> opts.runDir
 *   --out <dir>              where the PNGs go (default <runDir>/plots) -> opts.out
 */
import { existsSync, statSync } from 'node:fs';
import { mkdirOut } from '../fs/out-dir.ts';
import { UserError } from '../errors.ts';
import { plotRun } from '../train/metrics/plot.ts';

export const options = {
  arguments: [{ name: 'runDir', description: 'run folder holding metrics.jsonl' }],
  flags: [{ flags: '--out <dir>', description: 'output folder for the PNGs (default <runDir>/plots)' }],
} as const;

export async function run(opts: Record<string, unknown>): Promise<void> {
  const runDir = opts.runDir;
  if (typeof runDir !== 'string' || runDir === '') throw new UserError('sharp plot: missing RUN_DIR');
  if (!existsSync(runDir) || !statSync(runDir).isDirectory()) throw new UserError(`sharp plot: ${runDir} is not a folder`);
  const out = opts.out;
  if (out !== undefined && typeof out !== 'string') throw new UserError('sharp plot: --out needs a folder path');
  if (out !== undefined) mkdirOut(out, 'sharp plot: --out');
  let results;
  try {
    results = await plotRun(runDir, out);
  } catch (err) {
    throw new UserError(err instanceof Error ? err.message : String(err));
  }
  for (const r of results) process.stdout.write(`${r.file}  (${r.series.join(', ')}; ${r.points} points)\n`);
}
