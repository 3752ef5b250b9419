import type { DataId, TensorInfo } from '@tensorflow/tfjs';
import type { NativeAddon } from './addon.ts';

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

export interface WasmBackend {
  wasm: WasmModule;
  dataIdMap: { get(dataId: DataId): TensorData; has(dataId: DataId): boolean; set(dataId: DataId, d: TensorData): void; delete(dataId: DataId): boolean };
  dataIdNextNumber: number;
  makeOutput(shape: number[], dtype: string, memoryOffset?: number): TensorInfo;
  disposeData(dataId: DataId, force?: boolean): boolean;
  refCount(dataId: DataId): number;
  incRef(dataId: DataId): void;
  typedArrayFromHeap(t: TensorInfo): Float32Array | Int32Array | Uint8Array;
}

/** Byte offset of a tensor in the wasm heap. */
export function off(backend: WasmBackend, t: TensorInfo): number {
  return backend.dataIdMap.get(t.dataId).memoryOffset;
}

/** Native-side state shared by all kernels: the addon, its argument block, the heap it last saw. */
export class NativeContext {
  readonly args: Float64Array;
  private heap: ArrayBuffer | undefined;

  constructor(readonly addon: NativeAddon) {
    this.args = new Float64Array(addon.argsLength);
    addon.setArgs(this.args);
  }

  /** Re-points the addon at the wasm memory when it has grown (the buffer identity changes). */
  syncHeap(backend: WasmBackend): void {
    const buf = backend.wasm.HEAPU8.buffer as ArrayBuffer;
    if (buf !== this.heap) {
      this.addon.setHeap(buf);
      this.heap = buf;
    }
  }

  /** Throws a one-line error naming the kernel when a native call reports a failure. */
  check(code: number, kernel: string): void {
    if (code !== 0) throw new Error(`native ${kernel} failed: ${this.addon.lastError() || `code ${code}`}`);
  }
}
