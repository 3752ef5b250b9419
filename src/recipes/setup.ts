import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Level } from 'pino';
import { probeCudaLibs } from '../backend/cuda-libs.ts';
import { gpuFallbackWarning, resolveBackendName } from '../backend/gpu-check.ts';
import { BackendError, initBackend, type BackendName } from '../backend/select.ts';
import { enableNativeKernels } from '../backend/native/index.ts';
import { loadConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { UserError } from '../errors.ts';
import { createLogger, type RunLogger } from '../run/logger.ts';
import { assertRunDir, createRunDir, latestRunDir } from '../run/run-dir.ts';

/**
 * What every training command (`sharp train`, `sharp sft`, `sharp dpo`) does before its stages:
 * read the config (file <- --set), start the tensor backend the flag / SHARP_BACKEND / run.backend
 * names (with a warning when a requested GPU falls back, and the native wasm kernels
 * unless SHARP_NATIVE=0), and open the run's log.jsonl.
 */
export function configFrom(opts: Record<string, unknown>, fallbackFile?: string): Config {
  const file = typeof opts.config === 'string' ? opts.config : fallbackFile;
  const sets = Array.isArray(opts.set) ? opts.set.map(String) : [];
  return loadConfig({ file, sets });
}

export async function startBackend(flag: unknown, cfg: Config, warn: (msg: string) => void): Promise<{ backend: string; native: string }> {
  let requested: BackendName;
  try {
    requested = resolveBackendName(typeof flag === 'string' ? flag : undefined, cfg.run.backend);
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  let choice;
  try {
    choice = await initBackend(requested, cfg.run.threads);
  } catch (err) {
    if (err instanceof BackendError) throw new UserError(err.message);
    throw err;
  }
  const warning = gpuFallbackWarning(requested, choice, requested === 'tensorflow' ? probeCudaLibs() : []);
  if (warning) warn(warning);
  let native = 'off';
  if (choice.backend === 'wasm' && process.env.SHARP_NATIVE !== '0') {
    const s = enableNativeKernels();
    native = s.mode === 'native' ? 'native' : `${s.mode} (${s.reason})`;
  }
  return { backend: choice.backend, native };
}

export function openLog(runDir: string, level: Config['run']['logLevel']): RunLogger {
  return createLogger({ file: join(runDir, 'log.jsonl'), level: level as Level });
}

/**
 * The run folder `--resume [dir]` names: the folder itself, or (flag without a value) the newest
 * `<run.dir>/<run.name>-<stamp>` folder (stamps sort by time).
 */
export function resumeDir(resume: unknown, cfg: Config): string {
  if (typeof resume === 'string' && resume !== '') return assertRunDir(resume);
  const last = latestRunDir(cfg.run.dir, cfg.run.name);
  if (!last) throw new UserError(`--resume: no run named '${cfg.run.name}' in ${cfg.run.dir}/`);
  return assertRunDir(last);
}

/**
 * Ctrl-C for long runs: the first SIGINT sets `stop.requested` (the loop finishes its step, saves a
 * checkpoint and returns), a second one exits at once (130). `release` removes the handler.
 */
export function stopOnSigint(log: { warn: (msg: string) => void }): { stop: { requested: boolean }; release: () => void } {
  const stop = { requested: false };
  const onSigint = (): void => {
    if (stop.requested) process.exit(130);
    stop.requested = true;
    log.warn('SIGINT: finishing the current step, then saving a checkpoint (Ctrl-C again to quit now)');
  };
  process.on('SIGINT', onSigint);
  return { stop, release: () => process.off('SIGINT', onSigint) };
}

/**
 * The config of a command with `--resume [dir]` (`sharp sft`, `sharp dpo`): the named run folder's
 * own config.yaml unless --config is given, then --set.
 */
export function resumableConfig(opts: Record<string, unknown>): { cfg: Config; resuming: boolean } {
  const resuming = opts.resume !== undefined && opts.resume !== false;
  const explicitDir = typeof opts.resume === 'string' && opts.resume !== '' ? opts.resume : undefined;
  const ownConfig = explicitDir && opts.config === undefined && existsSync(join(explicitDir, 'config.yaml')) ? join(explicitDir, 'config.yaml') : undefined;
  return { cfg: configFrom(opts, ownConfig), resuming };
}

/** The run folder: the one --resume names (or the newest of run.name), else a new one. */
export function runDirFor(opts: Record<string, unknown>, cfg: Config, resuming: boolean): string {
  return resuming ? resumeDir(opts.resume, cfg) : createRunDir(cfg);
}
