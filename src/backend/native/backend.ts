import * as tf from '@tensorflow/tfjs';
import type { KernelBackend as TfKernelBackend } from '@tensorflow/tfjs';
import { availableParallelism } from 'node:os';
import { loadTypedAddon } from './addon.ts';
import { ArrayContext, type CpuBackend } from './arrays.ts';
import type { NativeStatus } from './register.ts';
import { NATIVE_KERNELS } from './register.ts';

/**
 * The `native` tfjs backend: tfjs-backend-cpu's MathBackendCPU (tensors as TypedArrays in ordinary
 * memory, so no 4 GiB wasm heap; docs/architecture.md) with the addon's kernels, through its
 * typed-array binding, in place of the JS kernels of the hot ops (NATIVE_KERNELS, the same set as
 * on wasm); every other op runs tfjs-backend-cpu's JS kernel (native/README.md lists them).
 */
export const NATIVE_BACKEND = 'native';

let status: NativeStatus | undefined;
let ctx: ArrayContext | undefined;

/**
 * Reads hand out copies: MathBackendCPU returns its own array, which nativeAdamW updates in place,
 * so a `dataSync()` kept across an optimizer step would change under its holder (on wasm a read is
 * always a copy).
 */
function copyingReads(b: CpuBackend & TfKernelBackend): void {
  const readSync = b.readSync.bind(b);
  b.readSync = (dataId) => {
    const v = readSync(dataId);
    return ArrayBuffer.isView(v) ? (v as Float32Array).slice() : v;
  };
  b.read = (dataId) => Promise.resolve(b.readSync(dataId));
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
    return { loaded: false, mode: 'off', reason: addon ? 'the tfjs cpu backend is not registered' : reason, kernels: [], blasThreads: 0 };
  }
  ctx = new ArrayContext(addon);
  tf.registerBackend(
    NATIVE_BACKEND,
    () => {
      const b = cpuFactory() as CpuBackend & TfKernelBackend & { firstUse: boolean };
      b.firstUse = false; // no "install tfjs-node" banner: this backend is the native one
      copyingReads(b);
      return b;
    },
    0, // below cpu's priority: never tfjs's own default
  );
  for (const k of tf.getKernelsForBackend('cpu')) tf.registerKernel({ ...k, backendName: NATIVE_BACKEND });
  for (const k of NATIVE_KERNELS) {
    const stock = tf.getKernel(k.name, 'cpu')?.kernelFunc ?? missingStock(k.name);
    if (tf.getKernel(k.name, NATIVE_BACKEND)) tf.unregisterKernel(k.name, NATIVE_BACKEND);
    tf.registerKernel({ kernelName: k.name, backendName: NATIVE_BACKEND, kernelFunc: k.make(ctx, stock) });
  }
  addon.setThreads(availableParallelism());
  const threads = addon.setAutoThreads(availableParallelism());
  status = { loaded: true, mode: 'native', reason: '', kernels: NATIVE_KERNELS.map((k) => k.name), blasThreads: threads, blasPolicy: 'auto', blasConfig: addon.blasConfig(), source };
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
