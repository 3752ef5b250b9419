/**
 * `sharp train --config X`: the whole recipe of src/recipes/stages/train-pipeline.ts
 * (data -> model -> SFT -> held-out accuracy -> SHARP-GRPO -> held-out accuracy) in a run folder
 * `runs/<name>-<stamp>/` (config.yaml, log.jsonl, metrics.jsonl, tb/, checkpoints/, summary.json).
 * Ctrl-C (SIGINT) finishes the current RL step, saves a checkpoint and exits 130 (interrupted, as a
 * shell reports a process stopped by SIGINT, so `sharp train && sharp eval` stops there); a second
 * Ctrl-C exits at once (130). A killed run continues from its latest checkpoint with --resume.
 * Flags: src/recipes/commands.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainFlags } from './commands.ts';
import { trainPipeline } from './stages/train-pipeline.ts';
import { inRunDir, resumableConfig, withRun, type BackendInfo } from './stages/run-setup.ts';
import { checkPositions } from './stages/positions.ts';
import { checkInitSize } from './stages/model-size.ts';
import { checkBf16Base, checkTrainDecompositions } from './stages/preflight.ts';

/** The exit status of a run stopped by Ctrl-C after saving its checkpoint: 128 + SIGINT. */
const SIGINT_EXIT = 130;

export async function run(opts: TrainFlags): Promise<void> {
  const { cfg, resuming } = resumableConfig(opts);
  // What cannot work is refused before the run folder exists.
  await checkPositions(cfg, 'train');
  if (cfg.model.init.enabled && !existsSync(join(cfg.model.path, 'config.json')))
    checkInitSize(cfg.model.init, 'model.init');
  checkTrainDecompositions(cfg, 'train');
  await checkBf16Base(cfg, opts.backend, 'train');
  await inRunDir(opts, cfg, resuming, (runDir) =>
    withRun({ cfg, backendFlag: opts.backend, logDir: runDir, sigint: true }, async ({ log, backend, stop }) => {
      log.info(
        { runDir, backend: backend.backend, native: backend.native, resume: resuming },
        resuming ? 'resuming run' : 'new run',
      );
      const t0 = performance.now();
      const res = await trainPipeline({ cfg, runDir, log, stop });
      if (!res.stopped) process.stdout.write(`${tookLine((performance.now() - t0) / 1000, backend)}\n`);
      else process.exitCode = SIGINT_EXIT;
    }),
  );
}

/**
 * "took 7 min 41 s (wasm backend, native OpenBLAS kernels: prebuilt)", with the way to the kernels when they are off.
 */
export function tookLine(seconds: number, be: BackendInfo): string {
  const m = Math.floor(seconds / 60);
  const t = `${m > 0 ? `${m} min ` : ''}${Math.round(seconds - 60 * m)} s`;
  if (be.backend !== 'wasm') return `took ${t} (${be.backend} backend)`;
  if (be.native === 'native')
    return `took ${t} (wasm backend, native OpenBLAS kernels${be.nativeSource ? `: ${be.nativeSource}` : ''})`;
  return (
    `took ${t} (wasm backend without the native OpenBLAS kernels: ${be.native}; with them training runs 3-4x ` +
    `faster: apt-get install libopenblas-dev, then npm run build:native)`
  );
}
