import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ablate, checkAblationConfig } from '../../recipes/ablate.ts';
import { configFrom, openLog, startBackend, stopOnSigint } from '../../recipes/setup.ts';
import { closeCalculateWorker } from '../../tools/calculate.ts';
import { closeCodeSandbox } from '../../tools/code.ts';

/**
 * `sharp ablate --config X [--out DIR]`: src/recipes/ablate.ts in DIR (default ablation.out, else
 * <run.dir>/<run.name>). Running the same command again resumes: finished runs are skipped, an
 * unfinished one continues from its checkpoint. Ctrl-C finishes the current RL step, saves, writes
 * the partial report and exits 0.
 */
export async function run(opts: Record<string, unknown>): Promise<void> {
  const cfg = configFrom(opts);
  checkAblationConfig(cfg);
  const dir = resolve(typeof opts.out === 'string' && opts.out !== '' ? opts.out : cfg.ablation.out || join(cfg.run.dir, cfg.run.name));
  mkdirSync(dir, { recursive: true });
  const { log, close } = openLog(dir, cfg.run.logLevel);
  const { stop, release } = stopOnSigint(log);
  try {
    const be = await startBackend(opts.backend, cfg, (msg) => log.warn(msg));
    log.info({ dir, backend: be.backend, native: be.native, methods: cfg.ablation.methods, seeds: cfg.ablation.seeds }, 'ablation');
    const command = ['sharp ablate', ...process.argv.slice(3)].join(' ');
    await ablate({ cfg, dir, log, stop, command });
  } finally {
    release();
    await closeCodeSandbox();
    await closeCalculateWorker();
    await close();
  }
}
