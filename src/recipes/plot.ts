/**
 * `sharp plot RUN_DIR [--out DIR]`: renders reward / accuracy / credit-per-role curves of a run to PNG.
 * An existing --out must be empty or an earlier plot's folder; the run's own plots/ always may be.
 * Flags: src/recipes/commands.ts.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { claimOutDir, markOutDir } from '../fs/output-guard.ts';
import { UserError } from '../errors.ts';
import { plotRun } from '../train/metrics/plot.ts';
import type { PlotFlags } from './commands.ts';

export async function run(opts: PlotFlags): Promise<void> {
  const { runDir, out } = opts;
  if (!existsSync(runDir) || !statSync(runDir).isDirectory())
    throw new UserError(`sharp plot: ${runDir} is not a folder`);
  const claim = { command: 'plot', flag: 'sharp plot: --out', forceable: false };
  const dir = out ?? join(runDir, 'plots');
  claimOutDir(dir, { ...claim, force: out === undefined });
  markOutDir(dir, claim);
  let results;
  try {
    results = await plotRun(runDir, dir);
  } catch (err) {
    throw new UserError(err instanceof Error ? err.message : String(err));
  }
  for (const r of results) process.stdout.write(`${r.file}  (${r.series.join(', ')}; ${r.points} points)\n`);
}
