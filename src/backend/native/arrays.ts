import type { DataId, TensorInfo } from '@tensorflow/tfjs';
import type { NativeKernelFn } from './addon.ts';
import { NativeContext, type KernelBackend } from './context.ts';

/**
 * The parts of tfjs-backend-cpu 4.22's MathBackendCPU that the `native` backend uses (internals,
 * pinned version: the parity tests are the guard). Every tensor's data is one TypedArray in ordinary
 * memory, `data.get(dataId).values` (Float32Array, Int32Array, or Uint8Array for bool).
 */
export interface CpuBackend extends KernelBackend {
  data: { get(dataId: DataId): { values?: unknown; dtype: string } };
  makeTensorInfo(shape: number[], dtype: string, values?: ArrayBufferView): TensorInfo;
}

type Typed = Float32Array | Int32Array | Uint8Array;

/** A zero-filled array for `n` elements of `dtype` (bool: one byte each, as tfjs stores it). */
export function arrayFor(dtype: string, n: number): Typed {
  if (dtype === 'int32') return new Int32Array(n);
  if (dtype === 'bool') return new Uint8Array(n);
  return new Float32Array(n);
}

const kindOf = (dtype: string): typeof Float32Array | typeof Int32Array | typeof Uint8Array => (dtype === 'int32' ? Int32Array : dtype === 'bool' ? Uint8Array : Float32Array);

/**
 * The typed-array binding: a tensor's reference is the index of its TypedArray among the arrays
 * handed to the call (native/src/kernels.h), so the kernels run on the tensors' own memory. Data
 * stored in another array type (tfjs keeps what it is given) is passed as a converted copy, which
 * only inputs can be: outputs are always made here.
 */
export class ArrayContext extends NativeContext {
  private arrays: ArrayBufferView[] = [];

  output(backend: KernelBackend, shape: number[], dtype: string): TensorInfo {
    let n = 1;
    for (const d of shape) n *= d;
    return (backend as CpuBackend).makeTensorInfo(shape, dtype, arrayFor(dtype, n));
  }

  ref(backend: KernelBackend, t: TensorInfo): number {
    const values = (backend as CpuBackend).data.get(t.dataId).values;
    const Kind = kindOf(t.dtype);
    this.arrays.push(values instanceof Kind ? values : Kind.from(values as ArrayLike<number>));
    return this.arrays.length - 1;
  }

  call(_backend: KernelBackend, fn: NativeKernelFn): number {
    const arrays = this.arrays;
    this.arrays = [];
    return this.addon.typed![fn](...arrays);
  }
}
