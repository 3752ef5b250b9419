import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Level } from 'pino';
import { probeCudaLibs } from '../../backend/cuda-libs.ts';
import { gpuFallbackWarning, resolveBackendName } from '../../backend/gpu-check.ts';
import { BackendError, initBackend, trainingStateBytes, type BackendName } from '../../backend/select.ts';
import { enableNativeKernels } from '../../backend/native/index.ts';
import { loadConfig } from '../../config/load.ts';
import { setPrefixCacheBytes } from '../../generation/prefix-cache.ts';
import { numel } from '../../model/io/header.ts';
import { readSafetensorsHeader } from '../../model/io/safetensors.ts';
import type { Config } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { createLogger, type RunLogger } from '../../run/logger.ts';
import { assertRunDir, createRunDir, latestRunDir, RUN_CONFIG_FILE } from '../../run/run-dir.ts';
import { acquireRunLock, LOCK_FILE } from '../../run/run-lock.ts';
import { closeCalculateWorker } from '../../tools/calculate.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { closeUserTools, startUserTools } from '../../tools/user/user-tools.ts';

/**
 * The one run setup every command recipe starts from: read the config (file <- --set), start the
 * tensor backend the flag / SHARP_BACKEND / run.backend names (with a warning when a requested GPU
 * falls back to the CPU, and the native OpenBLAS kernels on wasm unless SHARP_NATIVE=0), open the
 * run's log (log.jsonl in the run folder, or the terminal only), and at the end close the tool
 * sandboxes and the log (`withRun`).
 */
interface ConfigSource {
  /** -c, --config FILE */
  config?: string;
  /** --set key=value, in order */
  set?: readonly string[];
}

/** Resume flag of a command: --resume DIR, or --resume alone (true: the newest run of run.name). */
interface ResumeFlag {
  resume?: string | true;
}

export function configFrom(opts: ConfigSource, fallbackFile?: string): Config {
  return loadConfig({ file: opts.config ?? fallbackFile, sets: [...(opts.set ?? [])] });
}

/**
 * The KV prefix cache's budget (rollout.prefixCacheMiB). Off in distributed runs: a job's results
 * must equal the in-process reference's bit for bit, and which prefixes a process has cached
 * (which jobs it ran before) changes the float rounding of a hit.
 */
export function prefixCacheBytes(cfg: Config): number {
  const d = cfg.rollout.distributed;
  return d.redis !== '' || d.local ? 0 : cfg.rollout.prefixCacheMiB * 2 ** 20;
}

export async function startBackend(
  flag: string | undefined,
  cfg: Config,
  warn: (msg: string) => void,
): Promise<BackendInfo> {
  let requested: BackendName;
  try {
    requested = resolveBackendName(flag, cfg.run.backend);
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  let choice;
  try {
    choice = await initBackend(
      requested,
      cfg.run.threads,
      requested === 'auto' ? await modelStateBytes(cfg.model.path) : 0,
    );
  } catch (err) {
    if (err instanceof BackendError) throw new UserError(err.message);
    throw err;
  }
  setPrefixCacheBytes(prefixCacheBytes(cfg));
  const warning = gpuFallbackWarning(requested, choice, requested === 'tensorflow' ? probeCudaLibs() : []);
  if (warning) warn(warning);
  let native = 'off';
  let nativeSource: BackendInfo['nativeSource'];
  if (choice.backend === 'wasm' && process.env.SHARP_NATIVE !== '0') {
    const s = enableNativeKernels();
    native = s.mode === 'native' ? 'native' : `${s.mode} (${s.reason})`;
    nativeSource = s.source;
  } else if (choice.backend === 'native') {
    native = 'native';
    nativeSource = choice.native?.source;
  }
  return { backend: choice.backend, native, ...(nativeSource ? { nativeSource } : {}) };
}

function openLog(runDir: string, level: Config['run']['logLevel']): RunLogger {
  return createLogger({ file: join(runDir, 'log.jsonl'), level: level as Level });
}

/**
 * The run folder `--resume [dir]` names: the folder itself, or (flag without a value) the newest
 * `<run.dir>/<run.name>-<stamp>` folder (stamps sort by time).
 */
export function resumeDir(resume: ResumeFlag['resume'], cfg: Config): string {
  let dir: string;
  if (typeof resume === 'string' && resume !== '') dir = assertRunDir(resume);
  else {
    const last = latestRunDir(cfg.run.dir, cfg.run.name);
    if (!last) throw new UserError(`--resume: no run named '${cfg.run.name}' in ${cfg.run.dir}/`);
    dir = assertRunDir(last);
  }
  // One writer per run: a second `--resume` while the run trains is refused here.
  acquireRunLock(dir);
  return dir;
}

/**
 * Ctrl-C for long runs: the first SIGINT sets `stop.requested` (the loop finishes its step, saves a
 * checkpoint and returns), a second one exits at once (130). `release` removes the handler.
 */
function stopOnSigint(log: { warn: (msg: string) => void }): { stop: { requested: boolean }; release: () => void } {
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
export function resumableConfig(opts: ConfigSource & ResumeFlag): { cfg: Config; resuming: boolean } {
  const resuming = opts.resume !== undefined;
  const explicitDir = typeof opts.resume === 'string' && opts.resume !== '' ? opts.resume : undefined;
  const ownConfig =
    explicitDir && opts.config === undefined && existsSync(join(explicitDir, 'config.yaml'))
      ? join(explicitDir, 'config.yaml')
      : undefined;
  return { cfg: configFrom(opts, ownConfig), resuming };
}

/** The run folder, locked for this process: the one --resume names (or the newest of run.name), else a new one. */
function runDirFor(opts: ResumeFlag, cfg: Config, resuming: boolean): string {
  return resuming ? resumeDir(opts.resume, cfg) : createRunDir(cfg);
}

/** What a fresh run folder holds before any work: removed again when the run stops on bad input. */
const SETUP_FILES = new Set([RUN_CONFIG_FILE, 'log.jsonl', LOCK_FILE]);

/**
 * Runs `body` in the run folder of runDirFor, locked until it returns or the process exits. A fresh folder that a
 * run left with nothing but its setup files (bad input found before any work: a missing model, an
 * empty config) is removed, so mistakes do not pile up empty `runs/<name>-<stamp>/` folders.
 */
export async function inRunDir(
  opts: ResumeFlag,
  cfg: Config,
  resuming: boolean,
  body: (runDir: string) => Promise<void>,
): Promise<void> {
  await startTools(cfg);
  const runDir = runDirFor(opts, cfg, resuming);
  const lock = acquireRunLock(runDir);
  try {
    await body(runDir);
  } catch (err) {
    if (!resuming && err instanceof UserError && readdirSync(runDir).every((f) => SETUP_FILES.has(f))) {
      lock.release();
      rmSync(runDir, { recursive: true, force: true });
    }
    throw err;
  } finally {
    // The command is over: the next one may write the run (a process exit releases it too).
    lock.release();
  }
}

/**
 * The float32 training state of the checkpoint in `dir` (weights from its safetensors headers,
 * gradients, AdamW moments), for auto's choice between wasm and native; 0 when there is none yet.
 */
async function modelStateBytes(dir: string): Promise<number> {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.safetensors')) : [];
  let parameters = 0;
  try {
    for (const f of files)
      for (const e of (await readSafetensorsHeader(join(dir, f))).entries) parameters += numel(e.shape);
  } catch {
    return 0; // an unreadable checkpoint: the model loader reports it
  }
  return trainingStateBytes(parameters, true);
}

/** What `startBackend` reports: the backend that runs and the state of the native kernels. */
export interface BackendInfo {
  backend: string;
  native: string;
  /** With native kernels: which binary runs them (the committed prebuilt one or the local build). */
  nativeSource?: 'prebuilt' | 'local build';
}

export interface RunSetup {
  cfg: Config;
  /** The --backend flag (undefined: SHARP_BACKEND, then run.backend). */
  backendFlag?: string;
  /** Folder whose log.jsonl receives the log; without one the log goes to the terminal only. */
  logDir?: string;
  /** Whether the command runs tensors (default true); a scripted policy needs no backend. */
  tensors?: boolean;
  /** Ctrl-C finishes the current step (stopOnSigint) instead of exiting at once. */
  sigint?: boolean;
}

export interface RunContext {
  log: RunLogger['log'];
  backend: BackendInfo;
  /** Set by the first Ctrl-C when `sigint` is on; never set otherwise. */
  stop: { requested: boolean };
}

/** Ends the QuickJS and mathjs workers, the user tools' processes and MCP connections, so the process can exit. */
async function closeTools(): Promise<void> {
  await closeCodeSandbox();
  await closeCalculateWorker();
  await closeUserTools();
}

/**
 * Starts the user tools of rollout.tools (tools/user/) before a command claims its folder: a module
 * that exports no tool, a name taken twice, an MCP server that does not start or list its tools in
 * time is one line and no folder. They stay up for the command's engine runs; withRun closes them.
 */
export async function startTools(cfg: Config): Promise<void> {
  await startUserTools(cfg.rollout.tools);
}

/**
 * Runs a command body inside the shared setup: logger, Ctrl-C handler, backend with the native
 * kernels; afterwards (also on error) the handler is removed, the tool sandboxes closed and the
 * log flushed.
 */
export async function withRun<T>(s: RunSetup, body: (run: RunContext) => Promise<T>): Promise<T> {
  const { log, close } = s.logDir
    ? openLog(s.logDir, s.cfg.run.logLevel)
    : createLogger({ level: s.cfg.run.logLevel as Level });
  const sig = s.sigint ? stopOnSigint(log) : undefined;
  try {
    const backend =
      s.tensors === false
        ? { backend: 'none', native: 'off' }
        : await startBackend(s.backendFlag, s.cfg, (msg) => log.warn(msg));
    return await body({ log, backend, stop: sig?.stop ?? { requested: false } });
  } finally {
    sig?.release();
    await closeTools();
    await close();
  }
}
