import * as tf from '@tensorflow/tfjs';
import type { KernelBackend as TfKernelBackend } from '@tensorflow/tfjs';
import { availableParallelism } from 'node:os';
import { loadTypedAddon } from './addon.ts';
import { ArrayContext, type CpuBackend } from './arrays.ts';
import { padV2Arrays } from './kernels/pad.ts';
import { cumsumNative } from './kernels/reduce.ts';
import { selectionArrays } from './kernels/selection.ts';
import { registrable } from './kernels/fused.ts';
import type { KernelOverride } from './kernels/types.ts';
import type { NativeStatus } from './register.ts';
import { NATIVE_KERNELS, nativeStatus } from './register.ts';

/**
 * The `native` tfjs backend: tfjs-backend-cpu's MathBackendCPU (tensors as TypedArrays in ordinary
 * memory, so no 4 GiB wasm heap) with the addon's kernels, through its typed-array binding, in place
 * of the JS kernels of the hot ops (NATIVE_BACKEND_KERNELS); every other op runs tfjs-backend-cpu's
 * JS kernel (native/README.md lists them).
 */
export const NATIVE_BACKEND = 'native';

/**
 * The kernels replaced on it: the wasm overrides' set, and those the wasm backend runs in C++ itself
 * while tfjs-backend-cpu runs them in JS (Cumsum, PadV2, decoding's ArgMax/TopK, the fills).
 */
export const NATIVE_BACKEND_KERNELS: readonly KernelOverride[] = [
  ...NATIVE_KERNELS,
  cumsumNative,
  padV2Arrays,
  ...selectionArrays,
];

let status: NativeStatus | undefined;
let ctx: ArrayContext | undefined;

/**
 * Hooks on one MathBackendCPU instance. Reads hand out copies: MathBackendCPU returns its own
 * array, which nativeAdamW updates in place and the pool recycles, so a `dataSync()` kept would
 * change under its holder (on wasm a read is always a copy). Every store of a pooled buffer other
 * than the kernel output's own pins it; a deleted tensor's buffer goes back to the pool.
 */
function hook(b: CpuBackend & TfKernelBackend, c: ArrayContext): void {
  const readSync = b.readSync.bind(b);
  b.readSync = (dataId) => {
    const v = readSync(dataId);
    return ArrayBuffer.isView(v) ? (v as Float32Array).slice() : v;
  };
  b.read = (dataId) => Promise.resolve(b.readSync(dataId));
  const pinShared = (values: unknown): void => {
    if (!c.storing && ArrayBuffer.isView(values) && c.pool.owns(values.buffer)) c.pool.pin(values.buffer);
  };
  const write = b.write.bind(b);
  b.write = (values, shape, dtype) => {
    pinShared(values);
    return write(values, shape, dtype);
  };
  const move = b.move.bind(b);
  b.move = (dataId, values, shape, dtype, refCount) => {
    pinShared(values);
    move(dataId, values, shape, dtype, refCount);
  };
  const disposeData = b.disposeData.bind(b);
  b.disposeData = (dataId, force) => {
    const values = b.data.has(dataId) ? b.data.get(dataId).values : undefined;
    const gone = disposeData(dataId, force);
    if (gone && ArrayBuffer.isView(values) && !b.data.has(dataId)) c.pool.give(values.buffer);
    return gone;
  };
}

/**
 * Registers the `native` backend once (idempotent; tf.setBackend('native') then activates it).
 * Never throws: without an addon that has the typed-array binding it registers nothing and says why.
 */
export function registerNativeBackend(): NativeStatus {
  if (status) return status;
  const { addon, reason, source } = loadTypedAddon();
  const cpuFactory = tf.findBackendFactory('cpu');
  if (!addon || !cpuFactory) {
    return {
      loaded: false,
      mode: 'off',
      reason: addon ? 'the tfjs cpu backend is not registered' : reason,
      kernels: [],
      blasThreads: 0,
    };
  }
  const c = new ArrayContext(addon);
  ctx = c;
  tf.registerBackend(
    NATIVE_BACKEND,
    () => {
      const b = cpuFactory() as CpuBackend & TfKernelBackend & { firstUse: boolean };
      b.firstUse = false; // no "install tfjs-node" banner: this backend is the native one
      hook(b, c);
      return b;
    },
    0, // below cpu's priority: never tfjs's own default
  );
  for (const k of tf.getKernelsForBackend('cpu')) tf.registerKernel({ ...k, backendName: NATIVE_BACKEND });
  const usable = NATIVE_BACKEND_KERNELS.filter((k) => registrable(k, c));
  for (const k of usable) {
    const stock = tf.getKernel(k.name, 'cpu')?.kernelFunc ?? missingStock(k.name);
    if (tf.getKernel(k.name, NATIVE_BACKEND)) tf.unregisterKernel(k.name, NATIVE_BACKEND);
    tf.registerKernel({ kernelName: k.name, backendName: NATIVE_BACKEND, kernelFunc: k.make(ctx, stock) });
  }
  addon.setThreads(availableParallelism());
  const threads = addon.setAutoThreads(availableParallelism());
  status = {
    loaded: true,
    mode: 'native',
    reason: '',
    kernels: usable.map((k) => k.name),
    blasThreads: threads,
    blasPolicy: 'auto',
    blasConfig: addon.blasConfig(),
    source,
  };
  return status;
}

function missingStock(name: string): tf.KernelFunc {
  return () => {
    throw new Error(`${name}: tfjs-backend-cpu has no kernel for this case`);
  };
}

/** The typed-array context while the `native` backend is active (nativeAdamW's way in). */
export function arrayContext(): ArrayContext | undefined {
  return tf.getBackend() === NATIVE_BACKEND ? ctx : undefined;
}

/** Status of the `native` backend ('off' until registered). */
export function nativeBackendStatus(): NativeStatus {
  return status ?? { loaded: false, mode: 'off', reason: 'not registered', kernels: [], blasThreads: 0 };
}

/** Whether the addon's kernel `name` serves the active backend (the wasm overrides or the `native` backend). */
export function nativeKernelHere(name: string): boolean {
  const backend = tf.getBackend();
  const s = backend === NATIVE_BACKEND ? nativeBackendStatus() : backend === 'wasm' ? nativeStatus() : undefined;
  return s !== undefined && s.mode === 'native' && s.kernels.includes(name);
}
