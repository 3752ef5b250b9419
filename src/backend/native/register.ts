import * as tf from '@tensorflow/tfjs';
import type { KernelConfig, KernelFunc } from '@tensorflow/tfjs';
import { availableParallelism } from 'node:os';
import { loadAddon, type AddonSource } from './addon.ts';
import { makeFallbackBatchMatMul } from './fallback.ts';
import { HeapContext, type WasmBackend } from './heap.ts';
import { elementwiseNative } from './kernels/elementwise.ts';
import { layoutNative } from './kernels/layout.ts';
import { batchMatMulNative } from './kernels/matmul.ts';
import { attentionNative } from './kernels/attention.ts';
import { bf16Native } from './kernels/bf16.ts';
import { fusedNative, registrable } from './kernels/fused.ts';
import { cumsumNative, reduceNative } from './kernels/reduce.ts';
import type { KernelOverride } from './kernels/types.ts';

/**
 * Registers the native kernels (or, without the addon, the pure-wasm matmul split) as overrides on
 * the `wasm` backend. The lead's backend selector calls `enableNativeKernels()` after
 * the wasm backend is initialised; `sharp doctor` prints the returned status.
 */
export interface NativeStatus {
  /** The addon is loaded and its kernels are registered. */
  loaded: boolean;
  /** 'native': addon kernels; 'fallback': pure-wasm matmul split; 'off': nothing overridden. */
  mode: 'native' | 'fallback' | 'off';
  /** Why the addon is not in use (one line); empty when loaded. */
  reason: string;
  /** Kernel names overridden on the wasm backend. */
  kernels: string[];
  /**
   * Threads: the fixed OpenBLAS count, or in 'auto' the most the kernels split their work across (0 without the addon).
   */
  blasThreads: number;
  /**
   * 'auto': every kernel, GEMMs included, splits its work across the addon's thread pool (OpenBLAS
   * runs each part on the calling thread; small decode-step products stay on one thread);
   * 'fixed': setBlasThreads (OpenBLAS threads each GEMM, the other kernels run on one thread).
   */
  blasPolicy?: 'auto' | 'fixed';
  /** OpenBLAS build description (core, threading), when loaded. */
  blasConfig?: string;
  /** Which binary runs: the committed prebuilt one or the local build (src/backend/native/addon.ts). */
  source?: AddonSource;
}

/**
 * Every native override, in registration order. BatchMatMul first: it is the biggest win. The fused
 * kernels last: they register only where the binary has them (KernelOverride.needs).
 */
export const NATIVE_KERNELS: readonly KernelOverride[] = [
  batchMatMulNative,
  ...elementwiseNative,
  ...layoutNative,
  ...reduceNative,
  cumsumNative,
  ...fusedNative,
  ...attentionNative,
  ...bf16Native,
];

interface State {
  status: NativeStatus;
  ctx: HeapContext | undefined;
  /** Stock configs replaced (undefined where the wasm backend had none, e.g. UnsortedSegmentSum). */
  replaced: Map<string, KernelConfig | undefined>;
}

let state: State | undefined;

function override(name: string, kernelFunc: KernelFunc, replaced: State['replaced']): void {
  const stock = tf.getKernel(name, 'wasm');
  if (!replaced.has(name)) replaced.set(name, stock);
  if (stock) tf.unregisterKernel(name, 'wasm');
  tf.registerKernel({ kernelName: name, backendName: 'wasm', kernelFunc });
}

/** Stock kernel function (the one we replaced, or the registered one when not replaced). */
function stockOf(name: string, replaced: State['replaced']): KernelFunc | undefined {
  return replaced.has(name) ? replaced.get(name)?.kernelFunc : tf.getKernel(name, 'wasm')?.kernelFunc;
}

/** Stand-in for a kernel the wasm backend lacks (UnsortedSegmentSum): cases we do not cover fail clearly. */
function missingStock(name: string): KernelFunc {
  return () => {
    throw new Error(
      `${name}: the wasm backend has no kernel for this case (native covers float32 data with int32 ids)`,
    );
  };
}

function wasmBackend(): WasmBackend | undefined {
  if (tf.getBackend() !== 'wasm') return undefined;
  return tf.backend() as unknown as WasmBackend;
}

/**
 * Installs the overrides on the active wasm backend once (idempotent). Never throws: without the
 * addon (not built, failed to load, SHARP_NATIVE=0) it installs the pure-wasm fallback and says why.
 */
export function enableNativeKernels(): NativeStatus {
  if (state) return state.status;
  const backend = wasmBackend();
  if (!backend) {
    return {
      loaded: false,
      mode: 'off',
      reason: `active tfjs backend is '${tf.getBackend()}', not wasm`,
      kernels: [],
      blasThreads: 0,
    };
  }
  const replaced: State['replaced'] = new Map();
  const { addon, reason, source } = loadAddon();
  let ctx: HeapContext | undefined;
  let why = reason;
  if (addon) {
    try {
      ctx = new HeapContext(addon);
      ctx.syncHeap(backend); // throws for a SharedArrayBuffer heap (wasm threads), which we do not handle
    } catch (err) {
      ctx = undefined;
      why = `addon loaded but unusable: ${String(err instanceof Error ? err.message : err).split('\n')[0]}`;
    }
  }
  if (ctx) {
    const usable = NATIVE_KERNELS.filter((k) => registrable(k, ctx!));
    for (const k of usable) {
      const stock = tf.getKernel(k.name, 'wasm')?.kernelFunc ?? missingStock(k.name);
      override(k.name, k.make(ctx, stock), replaced);
    }
    ctx.addon.setThreads(availableParallelism());
    const threads = ctx.addon.setAutoThreads(availableParallelism());
    state = {
      ctx,
      replaced,
      status: {
        loaded: true,
        mode: 'native',
        reason: '',
        kernels: usable.map((k) => k.name),
        blasThreads: threads,
        blasPolicy: 'auto',
        blasConfig: ctx.addon.blasConfig(),
        source,
      },
    };
  } else {
    const stockMM = tf.getKernel('BatchMatMul', 'wasm')?.kernelFunc;
    const stockTr = tf.getKernel('Transpose', 'wasm')?.kernelFunc;
    if (!stockMM || !stockTr) {
      return {
        loaded: false,
        mode: 'off',
        reason: `${why}; stock wasm BatchMatMul/Transpose missing`,
        kernels: [],
        blasThreads: 0,
      };
    }
    override('BatchMatMul', makeFallbackBatchMatMul(stockMM, stockTr), replaced);
    state = {
      ctx: undefined,
      replaced,
      status: { loaded: false, mode: 'fallback', reason: why, kernels: ['BatchMatMul'], blasThreads: 0 },
    };
  }
  return state.status;
}

/**
 * Installs only the pure-wasm fallback (benchmarks compare it against native in one process).
 * Replaces whatever is installed.
 */
export function enableFallbackKernels(): NativeStatus {
  disableNativeKernels();
  const replaced: State['replaced'] = new Map();
  const stockMM = stockOf('BatchMatMul', replaced);
  const stockTr = stockOf('Transpose', replaced);
  if (!wasmBackend() || !stockMM || !stockTr) {
    return {
      loaded: false,
      mode: 'off',
      reason: 'wasm backend with BatchMatMul/Transpose required',
      kernels: [],
      blasThreads: 0,
    };
  }
  override('BatchMatMul', makeFallbackBatchMatMul(stockMM, stockTr), replaced);
  state = {
    ctx: undefined,
    replaced,
    status: { loaded: false, mode: 'fallback', reason: 'fallback requested', kernels: ['BatchMatMul'], blasThreads: 0 },
  };
  return state.status;
}

/** Restores the stock wasm kernels (tests and benchmarks switch back and forth). */
export function disableNativeKernels(): void {
  if (!state) return;
  for (const [name, stock] of state.replaced) {
    tf.unregisterKernel(name, 'wasm');
    if (stock) tf.registerKernel(stock);
  }
  state = undefined;
}

/** Status of what is installed now ('off' when nothing). */
export function nativeStatus(): NativeStatus {
  return state?.status ?? { loaded: false, mode: 'off', reason: 'not enabled', kernels: [], blasThreads: 0 };
}

/** The native context while the addon kernels are installed (used by nativeAdamW). */
export function nativeContext(): HeapContext | undefined {
  return state?.ctx;
}

/**
 * Sets a fixed OpenBLAS thread count (and leaves the other kernels on one thread); returns the count
 * in effect (0 without the addon). For measuring: the default is the 'auto' policy.
 */
export function setBlasThreads(n: number): number {
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`setBlasThreads: thread count must be a positive integer, got ${n}`);
  const ctx = state?.ctx;
  if (!ctx) return 0;
  const got = ctx.addon.setThreads(n);
  state!.status = { ...state!.status, blasThreads: got, blasPolicy: 'fixed' };
  return got;
}

/**
 * Thread policy: 'decode' -> 1 fixed BLAS thread, 'train' -> all cores to OpenBLAS, 'auto' (the
 * default after enableNativeKernels) -> the addon's pool on all cores for every kernel, GEMMs split
 * by the kernel itself, one thread for small GEMMs of <= 32 rows (a decode step's batch x 1 token), so
 * callers need not switch by hand. Returns the thread count.
 */
export function useBlasThreadsFor(phase: 'decode' | 'train' | 'auto'): number {
  if (phase !== 'auto') return setBlasThreads(phase === 'decode' ? 1 : availableParallelism());
  const ctx = state?.ctx;
  if (!ctx) return 0;
  const max = ctx.addon.setAutoThreads(availableParallelism());
  state!.status = { ...state!.status, blasThreads: max, blasPolicy: 'auto' };
  return max;
}
