import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createRunDir } from '../../run/run-dir.ts';
import { trainPipeline } from '../../recipes/train-pipeline.ts';
import { configFrom, openLog, resumeDir, startBackend } from '../../recipes/setup.ts';
import { closeCalculateWorker } from '../../tools/calculate.ts';
import { closeCodeSandbox } from '../../tools/code.ts';

/**
 * `sharp train --config X` (issue 6 items 4 and 7): the whole recipe of src/recipes/train-pipeline.ts
 * (data -> model -> SFT -> held-out accuracy -> SHARP-GRPO -> held-out accuracy) in a run folder
 * `runs/<name>-<stamp>/` (config.yaml, log.jsonl, metrics.jsonl, tb/, checkpoints/, summary.json).
 * Ctrl-C (SIGINT) finishes the current RL step, saves a checkpoint and exits 0; a second Ctrl-C
 * exits at once (130). A killed run continues from its latest checkpoint with --resume.
 *
 * export const options = {
 *   config: '-c, --config <file>   YAML config (default: the schema defaults; with --resume DIR: DIR/config.yaml)',
 *   set: '--set <key=value>        config override (repeatable)',
 *   backend: '--backend <name>     auto | tensorflow | wasm | cpu (default: SHARP_BACKEND, then run.backend)',
 *   resume: '--resume [dir]        continue a run: DIR, or the newest run named run.name (its latest checkpoint)',
 * }
 */
export async function run(opts: Record<string, unknown>): Promise<void> {
  const resuming = opts.resume !== undefined && opts.resume !== false;
  const explicitDir = typeof opts.resume === 'string' && opts.resume !== '' ? opts.resume : undefined;
  const ownConfig = explicitDir && opts.config === undefined && existsSync(join(explicitDir, 'config.yaml')) ? join(explicitDir, 'config.yaml') : undefined;
  const cfg = configFrom(opts, ownConfig);
  const runDir = resuming ? resumeDir(opts.resume, cfg) : createRunDir(cfg);
  const { log, close } = openLog(runDir, cfg.run.logLevel);
  const stop = { requested: false };
  const onSigint = (): void => {
    if (stop.requested) process.exit(130);
    stop.requested = true;
    log.warn('SIGINT: finishing the current step, then saving a checkpoint (Ctrl-C again to quit now)');
  };
  process.on('SIGINT', onSigint);
  try {
    const be = await startBackend(opts.backend, cfg, (msg) => log.warn(msg));
    log.info({ runDir, backend: be.backend, native: be.native, resume: resuming }, resuming ? 'resuming run' : 'new run');
    await trainPipeline({ cfg, runDir, log, stop });
  } finally {
    process.off('SIGINT', onSigint);
    await closeCodeSandbox();
    await closeCalculateWorker();
    await close();
  }
}
