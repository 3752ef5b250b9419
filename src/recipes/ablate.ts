import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { acquireRunLock } from '../run/run-lock.ts';
import type { AblateFlags } from './commands.ts';
import { ablate, checkAblationConfig } from './stages/run-ablation.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

/**
 * `sharp ablate --config X [--out DIR]`: the ablation of src/recipes/stages/run-ablation.ts in DIR (default ablation.out, else
 * <run.dir>/<run.name>). Running the same command again resumes: finished runs are skipped, an
 * unfinished one continues from its checkpoint. Ctrl-C finishes the current RL step, saves, writes
 * the partial report and exits 0. One process per ablation folder: a second one is refused (run.lock).
 * `--report` writes the report from the finished runs alone, trains nothing and takes no lock.
 */
export async function run(opts: AblateFlags): Promise<void> {
  const cfg = configFrom(opts);
  checkAblationConfig(cfg);
  const dir = resolve(opts.out || cfg.ablation.out || join(cfg.run.dir, cfg.run.name));
  mkdirSync(dir, { recursive: true });
  const reportOnly = opts.report === true;
  if (!reportOnly) acquireRunLock(dir);
  await withRun({ cfg, backendFlag: opts.backend, logDir: dir, sigint: true }, async ({ log, backend, stop }) => {
    log.info({ dir, backend: backend.backend, native: backend.native, methods: cfg.ablation.methods, seeds: cfg.ablation.seeds, reportOnly }, 'ablation');
    const command = ['sharp ablate', ...process.argv.slice(3)].join(' ');
    await ablate({ cfg, dir, log, stop, command, reportOnly });
  });
}
