/**
 * `sharp plot RUN_DIR [--out DIR]`: renders reward / accuracy / credit-per-role curves of a run to PNG.
 * Flags: src/recipes/commands.ts.
 */
import { existsSync, statSync } from 'node:fs';
import { mkdirOut } from '../fs/out-dir.ts';
import { UserError } from '../errors.ts';
import { plotRun } from '../train/metrics/plot.ts';
import type { PlotFlags } from './commands.ts';

export async function run(opts: PlotFlags): Promise<void> {
  const { runDir, out } = opts;
  if (!existsSync(runDir) || !statSync(runDir).isDirectory()) throw new UserError(`sharp plot: ${runDir} is not a folder`);
  if (out !== undefined) mkdirOut(out, 'sharp plot: --out');
  let results;
  try {
    results = await plotRun(runDir, out);
  } catch (err) {
    throw new UserError(err instanceof Error ? err.message : String(err));
  }
  for (const r of results) process.stdout.write(`${r.file}  (${r.series.join(', ')}; ${r.points} points)\n`);
}
