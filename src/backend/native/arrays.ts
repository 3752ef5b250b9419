import type { DataId, TensorInfo } from '@tensorflow/tfjs';
import type { NativeKernelFn } from './addon.ts';
import { NativeContext, type KernelBackend } from './context.ts';
import { ArrayPool } from './pool.ts';

/**
 * The parts of tfjs-backend-cpu 4.22's MathBackendCPU that the `native` backend uses (internals,
 * pinned version: the parity tests are the guard). Every tensor's data is one TypedArray in ordinary
 * memory, `data.get(dataId).values` (Float32Array, Int32Array, or Uint8Array for bool).
 */
export interface CpuBackend extends KernelBackend {
  data: { get(dataId: DataId): { values?: unknown; dtype: string }; has(dataId: DataId): boolean };
  makeTensorInfo(shape: number[], dtype: string, values?: ArrayBufferView): TensorInfo;
  write(values: unknown, shape: number[], dtype: string): DataId;
  move(dataId: DataId, values: unknown, shape: number[], dtype: string, refCount: number): void;
}

type Typed = Float32Array | Int32Array | Uint8Array;

const kindOf = (dtype: string): typeof Float32Array | typeof Int32Array | typeof Uint8Array =>
  dtype === 'int32' ? Int32Array : dtype === 'bool' ? Uint8Array : Float32Array;

/**
 * The typed-array binding: a tensor's reference is the index of its TypedArray among the arrays
 * handed to the call (native/src/kernels.h), so the kernels run on the tensors' own memory. Data
 * stored in another array type (tfjs keeps what it is given) is passed as a converted copy, which
 * only inputs can be: outputs are always made here, on buffers from `pool`.
 */
export class ArrayContext extends NativeContext {
  readonly binding = 'typed';
  private arrays: ArrayBufferView[] = [];
  readonly pool = new ArrayPool();
  /** True while `output` stores its own fresh array (the backend's write hook must not pin it). */
  storing = false;

  output(backend: KernelBackend, shape: number[], dtype: string): TensorInfo {
    let n = 1;
    for (const d of shape) n *= d;
    const Kind = kindOf(dtype);
    // contents undefined: the kernel writes all of it
    const values = new Kind(this.pool.take(n * Kind.BYTES_PER_ELEMENT), 0, n);
    this.storing = true;
    try {
      return (backend as CpuBackend).makeTensorInfo(shape, dtype, values);
    } finally {
      this.storing = false;
    }
  }

  /** The TypedArray holding `t`'s data (kernels that work in TypeScript on the arrays). */
  values(backend: KernelBackend, t: TensorInfo): Typed {
    const values = (backend as CpuBackend).data.get(t.dataId).values;
    const Kind = kindOf(t.dtype);
    return values instanceof Kind ? values : Kind.from(values as ArrayLike<number>);
  }

  /**
   * A pooled buffer that was never pinned is this tensor's alone; any other array that does not
   * span its whole buffer may be a view another tensor also sees (tfjs-backend-cpu's simple Slice
   * and StridedSlice return subarrays of their input).
   */
  override sharesMemory(backend: KernelBackend, t: TensorInfo): boolean {
    const v = (backend as CpuBackend).data.get(t.dataId).values;
    if (!ArrayBuffer.isView(v)) return false;
    return !this.pool.owns(v.buffer) && (v.byteOffset !== 0 || v.byteLength !== v.buffer.byteLength);
  }

  ref(backend: KernelBackend, t: TensorInfo): number {
    this.arrays.push(this.values(backend, t));
    return this.arrays.length - 1;
  }

  call(_backend: KernelBackend, fn: NativeKernelFn): number {
    const arrays = this.arrays;
    this.arrays = [];
    const kernel = this.addon.typed?.[fn];
    if (kernel === undefined) throw new Error(`native ${fn}: this binary predates the kernel`);
    return kernel(...arrays);
  }

  has(fn: NativeKernelFn): boolean {
    return typeof this.addon.typed?.[fn] === 'function';
  }
}
