/**
 * `sharp train --config X`: the whole recipe of src/recipes/stages/train-pipeline.ts
 * (data -> model -> SFT -> held-out accuracy -> SHARP-GRPO -> held-out accuracy) in a run folder
 * `runs/<name>-<stamp>/` (config.yaml, log.jsonl, metrics.jsonl, tb/, checkpoints/, summary.json).
 * Ctrl-C (SIGINT) finishes the current RL step, saves a checkpoint and exits 130 (interrupted, as a
 * shell reports a process stopped by SIGINT, so `sharp train && sharp eval` stops there); a second
 * Ctrl-C exits at once (130). A killed run continues from its latest checkpoint with --resume.
 * `train` is the recipe itself, the library's `train` (src/index.ts); `run` is the command around it:
 * flags -> config -> train -> the result lines. Flags: src/recipes/commands.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { checkedConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { accuracyLine, type TrainSummary } from '../eval/train-summary.ts';
import type { BackendChoice, TrainFlags } from './commands.ts';
import { trainPipeline } from './stages/train-pipeline.ts';
import { inRunDir, resumableConfig, withRun, type BackendInfo } from './stages/run-setup.ts';
import { checkPositions } from './stages/positions.ts';
import { checkInitSize } from './stages/model-size.ts';
import { checkBf16Base, checkTrainDecompositions } from './stages/preflight.ts';
import { userRewards } from '../credit/reward-modules.ts';
import type { RewardSpec } from '../credit/user-reward.ts';

/** The exit status of a run stopped by Ctrl-C after saving its checkpoint: 128 + SIGINT. */
const SIGINT_EXIT = 130;

export interface TrainOptions {
  /**
   * Continue a run from its latest checkpoint: its folder, or true for the newest
   * `<run.dir>/<run.name>-<stamp>` folder. The config must be the one the run was started with.
   */
  resume?: string | true;
  /** Tensor backend; default: the SHARP_BACKEND environment variable, then run.backend. */
  backend?: BackendChoice;
  /** Aborting it finishes the current RL step, saves a checkpoint and returns with `stopped: true`. */
  signal?: AbortSignal;
  /**
   * Ctrl-C (SIGINT) does what aborting `signal` does, and a second one exits the process at once:
   * what `sharp train` does (default false: a library leaves the process's signals alone).
   */
  sigint?: boolean;
  /**
   * User rewards in place of the accuracy of credit.success, summed with their weights
   * (docs/extending.md): `defineReward(fn)`, plain functions, or `{ reward, weight }`. The config's
   * credit.rewards names reward modules instead; giving both is refused.
   */
  rewards?: readonly RewardSpec[];
}

export interface TrainResult {
  /** The run folder: config.yaml, log.jsonl, metrics.jsonl, tb/, checkpoints/, trajectories/, summary.json. */
  runDir: string;
  /** What summary.json holds: held-out accuracy before and after RL, seconds per stage. */
  summary: TrainSummary;
  /** The last RL step done. */
  step: number;
  /** Stopped early (signal or Ctrl-C) after saving a checkpoint: continue with `resume: runDir`. */
  stopped: boolean;
  /** Wall-clock seconds of the run (setup excluded). */
  seconds: number;
  /** The tensor backend that ran, and the state of the native kernels. */
  backend: BackendInfo;
}

/**
 * Trains as `sharp train` does, with a parsed config (loadConfig): the same run folder, logs,
 * checkpoints and viewer records. Bad input is a UserError before the run folder exists where it can
 * be found that early.
 */
export async function train(given: Config, opts: TrainOptions = {}): Promise<TrainResult> {
  const cfg = checkedConfig(given);
  const resuming = opts.resume !== undefined;
  // What cannot work is refused before the run folder exists.
  await checkPositions(cfg, 'train');
  if (cfg.model.init.enabled && !existsSync(join(cfg.model.path, 'config.json')))
    checkInitSize(cfg.model.init, 'model.init');
  checkTrainDecompositions(cfg, 'train');
  await checkBf16Base(cfg, opts.backend, 'train');
  const rewards = await userRewards(cfg.credit, opts.rewards);
  let result: TrainResult | undefined;
  await inRunDir(opts, cfg, resuming, (runDir) =>
    withRun(
      { cfg, backendFlag: opts.backend, logDir: runDir, sigint: opts.sigint === true },
      async ({ log, backend, stop }) => {
        log.info(
          { runDir, backend: backend.backend, native: backend.native, resume: resuming },
          resuming ? 'resuming run' : 'new run',
        );
        const onAbort = (): void => {
          stop.requested = true;
        };
        if (opts.signal?.aborted) onAbort();
        opts.signal?.addEventListener('abort', onAbort);
        const t0 = performance.now();
        try {
          // The result line is the caller's to print (run below): a library writes nothing to stdout.
          const res = await trainPipeline({ cfg, runDir, log, stop, rewards, print: () => {} });
          result = { runDir, ...res, seconds: (performance.now() - t0) / 1000, backend };
        } finally {
          opts.signal?.removeEventListener('abort', onAbort);
        }
      },
    ),
  );
  if (!result) throw new Error('train: the run ended without a result');
  return result;
}

/** `sharp train`: the config (the run folder's own with --resume DIR), train, then the result lines. */
export async function run(opts: TrainFlags): Promise<void> {
  const { cfg } = resumableConfig(opts);
  const res = await train(cfg, { resume: opts.resume, backend: opts.backend, sigint: true });
  if (res.stopped) {
    process.exitCode = SIGINT_EXIT;
    return;
  }
  process.stdout.write(`${accuracyLine(res.summary)}\n${tookLine(res.seconds, res.backend)}\n`);
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
