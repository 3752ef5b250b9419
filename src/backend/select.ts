import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { availableParallelism } from 'node:os';
import { enableNativeKernels, NATIVE_BACKEND, registerNativeBackend, type NativeStatus } from './native/index.ts';
import { UserError } from '../errors.ts';

/**
 * Backend selection. `auto` tries tfjs-node-gpu, tfjs-node, wasm, native, cpu in that order, with
 * native ahead of wasm when the run's float32 state would not fit the wasm heap (`stateBytes`,
 * see `trainingStateBytes`), and records why each better one was skipped; an explicitly requested
 * backend that cannot load fails with a one-line BackendError. wasm stays ahead otherwise: on the
 * bench model native's median CPU time per step is up to ~25 % higher (more JS work per small op;
 * the minima agree; native/README.md).
 */
export type BackendName = 'auto' | 'tensorflow' | 'native' | 'wasm' | 'cpu';

/** Every name `--backend` accepts. */
export const BACKEND_NAMES: readonly BackendName[] = ['auto', 'tensorflow', 'native', 'wasm', 'cpu'];

/** tfjs-backend-wasm's heap limit: one 32-bit heap of at most 4 GiB - 64 KiB (emscripten getHeapMax). */
export const WASM_HEAP_BYTES = 4 * 2 ** 30 - 64 * 2 ** 10;

/**
 * The float32 state a run holds for a model of `parameters` weights: the weights, and when it trains
 * their gradients and AdamW's two moments; activations and the KV cache come on top.
 */
export function trainingStateBytes(parameters: number, training: boolean): number {
  return parameters * 4 * (training ? 4 : 1);
}

/**
 * The order auto tries the CPU backends in once tensorflow is out: native ahead of wasm when the
 * run's float32 state (`stateBytes`) exceeds the wasm heap, behind it otherwise.
 */
export function cpuOrder(stateBytes: number): ('native' | 'wasm' | 'cpu')[] {
  return stateBytes > WASM_HEAP_BYTES ? ['native', 'wasm', 'cpu'] : ['wasm', 'native', 'cpu'];
}

/** A backend that cannot be used; a UserError, so the CLI prints one line and exits 2. */
export class BackendError extends UserError {
  override readonly name = 'BackendError';
}

export interface BackendChoice {
  /** tfjs backend name now active: 'tensorflow', 'native', 'wasm' or 'cpu'. */
  backend: 'tensorflow' | 'native' | 'wasm' | 'cpu';
  /** npm package that provided it. */
  pkg: string;
  /** Why each better candidate was skipped, in the order tried. */
  skipped: { candidate: string; reason: string }[];
  /** Why auto put native ahead of wasm (empty when it did not). */
  why?: string;
  /** wasm only: SIMD and thread count in effect. */
  wasm?: { simd: boolean; threads: number; threadsRequested: number };
  /**
   * wasm: the kernel overrides in effect: native OpenBLAS kernels when the addon is built and
   * SHARP_NATIVE is not 0, else the pure-wasm matmul fallback. native: the addon's kernels in
   * place of tfjs-backend-cpu's JS ones.
   */
  native?: NativeStatus;
}

const require = createRequire(import.meta.url);
let current: BackendChoice | undefined;

/** Loads a tfjs-node package and proves it works with a 2x2 matmul; throws with the reason otherwise. */
async function tryTensorflow(pkg: string): Promise<void> {
  try {
    await import(pkg);
  } catch (err) {
    throw new BackendError(`${pkg} is not installed or failed to load (${firstLine(err)})`);
  }
  if (!(await tf.setBackend('tensorflow')))
    throw new BackendError(`${pkg} loaded but the tensorflow backend did not initialise`);
  smokeTest();
}

async function tryWasm(threads: number): Promise<BackendChoice['wasm']> {
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  // The .wasm binaries ship inside the npm package: point tfjs at them so nothing is fetched.
  const dir = dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'));
  wasm.setWasmPaths(join(dir, 'dist') + '/');
  const requested = threads > 0 ? threads : availableParallelism();
  wasm.setThreadsCount(requested);
  if (!(await tf.setBackend('wasm'))) throw new BackendError('wasm backend did not initialise');
  smokeTest();
  const simd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
  return { simd, threads: wasm.getThreadsCount(), threadsRequested: requested };
}

/** Installs the native (or fallback) kernels on the wasm backend and proves them with the smoke test. */
function installKernels(): NativeStatus {
  const status = enableNativeKernels();
  smokeTest();
  return status;
}

/** The `native` backend (src/backend/native/backend.ts): needs the addon with its typed-array binding. */
async function tryNative(): Promise<NativeStatus> {
  const status = registerNativeBackend();
  if (status.mode !== 'native') throw new BackendError(`native kernels unavailable: ${status.reason}`);
  if (!(await tf.setBackend(NATIVE_BACKEND))) throw new BackendError('native backend did not initialise');
  smokeTest();
  return status;
}

async function tryCpu(): Promise<void> {
  if (!(await tf.setBackend('cpu'))) throw new BackendError('cpu backend did not initialise');
  smokeTest();
}

function smokeTest(): void {
  // [2, 2]
  const v = tf.tidy(() => tf.matMul(tf.tensor2d([1, 2, 3, 4], [2, 2]), tf.tensor2d([5, 6, 7, 8], [2, 2])).dataSync());
  const want = [19, 22, 43, 50];
  if (!want.every((w, i) => v[i] === w))
    throw new BackendError(`2x2 matmul smoke test gave [${Array.from(v).join(', ')}]`);
}

function firstLine(err: unknown): string {
  return String(err instanceof Error ? err.message : err).split('\n')[0] ?? '';
}

/**
 * Initialises the requested backend once per process; later calls return the first choice when
 * compatible (tests and commands may call it freely). `stateBytes`: the run's float32 state when
 * known (0: unknown); auto then prefers native over wasm above WASM_HEAP_BYTES.
 */
export async function initBackend(name: BackendName = 'auto', threads = 0, stateBytes = 0): Promise<BackendChoice> {
  if (current && (name === 'auto' || name === current.backend)) return current;
  const skipped: BackendChoice['skipped'] = [];
  const attempt = async (
    candidate: string,
    run: () => Promise<BackendChoice | undefined>,
  ): Promise<BackendChoice | undefined> => {
    try {
      return await run();
    } catch (err) {
      if (name !== 'auto') throw new BackendError(`backend '${name}' is unavailable: ${firstLine(err)}`);
      skipped.push({ candidate, reason: firstLine(err) });
      return undefined;
    }
  };
  let choice: BackendChoice | undefined;
  if (name === 'auto' || name === 'tensorflow') {
    for (const pkg of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']) {
      choice ??= await attempt(pkg, async () => {
        await tryTensorflow(pkg);
        return { backend: 'tensorflow', pkg, skipped };
      });
      if (choice) break;
      if (name === 'tensorflow' && pkg === '@tensorflow/tfjs-node') {
        throw new BackendError(
          `backend 'tensorflow' is unavailable: ${skipped.map((s) => `${s.candidate}: ${s.reason}`).join('; ')}`,
        );
      }
    }
  }
  const gib = (b: number): string => (b / 2 ** 30).toFixed(1);
  const why =
    `the model's float32 state (${gib(stateBytes)} GiB before activations) exceeds the wasm heap ` +
    `(${gib(WASM_HEAP_BYTES)} GiB)`;
  const order = name === 'auto' ? cpuOrder(stateBytes) : name === 'tensorflow' ? [] : [name];
  for (const candidate of order) {
    if (choice) break;
    if (candidate === 'native') {
      choice = await attempt('native', async () => ({
        backend: 'native',
        pkg: '@tensorflow/tfjs-backend-cpu + sharp-rl native addon',
        skipped,
        native: await tryNative(),
        ...(name === 'auto' && order[0] === 'native' ? { why } : {}),
      }));
    } else if (candidate === 'wasm') {
      choice = await attempt('wasm', async () => {
        const wasm = await tryWasm(threads);
        return { backend: 'wasm', pkg: '@tensorflow/tfjs-backend-wasm', skipped, wasm, native: installKernels() };
      });
    } else {
      choice = await attempt('cpu', async () => {
        await tryCpu();
        return { backend: 'cpu', pkg: '@tensorflow/tfjs-backend-cpu', skipped };
      });
    }
  }
  if (!choice)
    throw new BackendError(
      `no tfjs backend could be initialised: ${skipped.map((s) => `${s.candidate}: ${s.reason}`).join('; ')}`,
    );
  current = choice;
  return choice;
}
