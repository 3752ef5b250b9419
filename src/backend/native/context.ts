import type { DataId, TensorInfo } from '@tensorflow/tfjs';
import type { NativeAddon, NativeKernelFn } from './addon.ts';

/** What the overrides need of any tfjs backend they run on (wasm and the tfjs-backend-cpu class both have these). */
export interface KernelBackend {
  disposeData(dataId: DataId, force?: boolean): boolean;
  refCount(dataId: DataId): number;
  incRef(dataId: DataId): void;
}

/** The addon keeps one argument block (native/src/addon.cc): contexts of one addon share it. */
const blocks = new WeakMap<NativeAddon, Float64Array>();

function argsBlock(addon: NativeAddon): Float64Array {
  let block = blocks.get(addon);
  if (!block) {
    block = new Float64Array(addon.argsLength);
    addon.setArgs(block);
    blocks.set(addon, block);
  }
  return block;
}

/**
 * Native-side state shared by all kernels of one backend: the addon and its argument block, and how
 * a tensor is handed to a kernel. A kernel allocates its outputs (`output`), writes each tensor's
 * reference into an argument slot (`ref`), then calls (`run`/`call`): the wasm binding passes heap
 * byte offsets (heap.ts), the typed-array binding the tensors' own TypedArrays (arrays.ts).
 */
export abstract class NativeContext {
  readonly args: Float64Array;
  /**
   * Which binding this context calls. Kernel forms newer than the binaries without the typed-array
   * binding (int32 Sum) are used only with 'typed', which proves the binary has them.
   */
  abstract readonly binding: 'heap' | 'typed';

  constructor(readonly addon: NativeAddon) {
    this.args = argsBlock(addon);
  }

  /** A new tensor of `backend` for a kernel to write (contents undefined). */
  abstract output(backend: KernelBackend, shape: number[], dtype: string): TensorInfo;
  /** The reference to `t` to write into an argument slot. */
  abstract ref(backend: KernelBackend, t: TensorInfo): number;
  /** Runs addon kernel `fn` on the arguments written; returns its status (0 = ok). */
  abstract call(backend: KernelBackend, fn: NativeKernelFn): number;
  /** Whether this binding of the loaded binary has kernel `fn` (older binaries lack the fused ones). */
  abstract has(fn: NativeKernelFn): boolean;

  /**
   * Whether `t`'s memory may be seen by another tensor under another data id (an in-place update
   * must copy it first). Reference counts cover shared data ids; this covers shared buffers.
   */
  sharesMemory(_backend: KernelBackend, _t: TensorInfo): boolean {
    return false;
  }

  /**
   * Writes the references of `refs`, then `scalars`, into the argument slots in order and runs addon
   * kernel `fn` (`run`): the calling convention of kernels whose arguments are tensors then numbers.
   */
  invoke(backend: KernelBackend, fn: NativeKernelFn, kernel: string, refs: TensorInfo[], scalars: number[]): void {
    const A = this.args;
    let i = 0;
    for (const t of refs) A[i++] = this.ref(backend, t);
    for (const v of scalars) A[i++] = v;
    this.run(backend, fn, kernel);
  }

  /** `call`, throwing a one-line error naming tfjs kernel `kernel` on failure. */
  run(backend: KernelBackend, fn: NativeKernelFn, kernel: string): void {
    this.check(this.call(backend, fn), kernel);
  }

  /** Throws a one-line error naming the kernel when a native call reports a failure. */
  check(code: number, kernel: string): void {
    if (code !== 0) throw new Error(`native ${kernel} failed: ${this.addon.lastError() || `code ${code}`}`);
  }
}
