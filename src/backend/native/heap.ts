import type { DataId, TensorInfo } from '@tensorflow/tfjs';
import type { NativeKernelFn } from './addon.ts';
import { NativeContext, type KernelBackend } from './context.ts';

/**
 * The parts of the tfjs-backend-wasm 4.22 BackendWasm that the overrides use (internals, pinned
 * version: the parity tests are the guard). Every tensor lives in the wasm heap at
 * `dataIdMap.get(dataId).memoryOffset`; `makeOutput` allocates there (and may grow the memory,
 * which detaches the old ArrayBuffer: call `syncHeap` after the last allocation of a kernel).
 */
interface TensorData {
  id: number;
  memoryOffset: number;
  shape: number[];
  dtype: string;
  refCount: number;
}

interface WasmModule {
  HEAPU8: Uint8Array;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  tfjs: { registerTensor(id: number, size: number, memoryOffset: number): void; disposeData(id: number): void };
}

export interface WasmBackend extends KernelBackend {
  wasm: WasmModule;
  dataIdMap: {
    get(dataId: DataId): TensorData;
    has(dataId: DataId): boolean;
    set(dataId: DataId, d: TensorData): void;
    delete(dataId: DataId): boolean;
  };
  dataIdNextNumber: number;
  makeOutput(shape: number[], dtype: string, memoryOffset?: number): TensorInfo;
  typedArrayFromHeap(t: TensorInfo): Float32Array | Int32Array | Uint8Array;
}

/** Byte offset of a tensor in the wasm heap. */
export function off(backend: WasmBackend, t: TensorInfo): number {
  return backend.dataIdMap.get(t.dataId).memoryOffset;
}

/** The heap binding: a tensor's reference is its byte offset in the wasm heap (native/src/kernels.h). */
export class HeapContext extends NativeContext {
  readonly binding = 'heap';
  private heap: ArrayBuffer | undefined;

  /** Re-points the addon at the wasm memory when it has grown (the buffer identity changes). */
  syncHeap(backend: WasmBackend): void {
    const buf = backend.wasm.HEAPU8.buffer as ArrayBuffer;
    if (buf !== this.heap) {
      this.addon.setHeap(buf);
      this.heap = buf;
    }
  }

  output(backend: KernelBackend, shape: number[], dtype: string): TensorInfo {
    return (backend as WasmBackend).makeOutput(shape, dtype);
  }

  ref(backend: KernelBackend, t: TensorInfo): number {
    return off(backend as WasmBackend, t);
  }

  /** After the kernel's last allocation (which may have grown the memory), so the heap is synced here. */
  call(backend: KernelBackend, fn: NativeKernelFn): number {
    this.syncHeap(backend as WasmBackend);
    const kernel = this.addon[fn];
    if (kernel === undefined) throw new Error(`native ${fn}: this binary predates the kernel`);
    return kernel.call(this.addon);
  }

  has(fn: NativeKernelFn): boolean {
    return typeof this.addon[fn] === 'function';
  }
}
