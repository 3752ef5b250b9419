import { trainPipeline } from './train-pipeline.ts';
import { openLog, resumableConfig, runDirFor, startBackend, stopOnSigint } from './setup.ts';
import { closeCalculateWorker } from '../tools/calculate.ts';
import { closeCodeSandbox } from '../tools/code.ts';

/**
 * `sharp train --config X`: the whole recipe of src/recipes/train-pipeline.ts
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
  const { cfg, resuming } = resumableConfig(opts);
  const runDir = runDirFor(opts, cfg, resuming);
  const { log, close } = openLog(runDir, cfg.run.logLevel);
  const { stop, release } = stopOnSigint(log);
  try {
    const be = await startBackend(opts.backend, cfg, (msg) => log.warn(msg));
    log.info({ runDir, backend: be.backend, native: be.native, resume: resuming }, resuming ? 'resuming run' : 'new run');
    const t0 = performance.now();
    const res = await trainPipeline({ cfg, runDir, log, stop });
    if (!res.stopped) process.stdout.write(`${tookLine((performance.now() - t0) / 1000, be)}\n`);
  } finally {
    release();
    await closeCodeSandbox();
    await closeCalculateWorker();
    await close();
  }
}

/** "took 7 min 41 s (wasm backend, native OpenBLAS kernels)", with the way to the kernels when they are off. */
export function tookLine(seconds: number, be: { backend: string; native: string }): string {
  const m = Math.floor(seconds / 60);
  const t = `${m > 0 ? `${m} min ` : ''}${Math.round(seconds - 60 * m)} s`;
  if (be.backend !== 'wasm') return `took ${t} (${be.backend} backend)`;
  if (be.native === 'native') return `took ${t} (wasm backend, native OpenBLAS kernels)`;
  return `took ${t} (wasm backend without the native OpenBLAS kernels: ${be.native}; with them training runs 3-4x faster: apt-get install libopenblas-dev, then npm run build:native)`;
}
