import type { KernelFunc, NamedAttrMap, TensorInfo } from '@tensorflow/tfjs';
import type { NativeKernelFn } from '../addon.ts';
import type { KernelBackend, NativeContext } from '../context.ts';

/** Arguments tfjs passes to a kernel function. */
export interface KernelArgs {
  inputs: Record<string, TensorInfo>;
  backend: KernelBackend;
  attrs: NamedAttrMap;
}

/**
 * One override: `make` receives the native context (undefined for pure-wasm overrides) and the stock
 * kernel of the backend, to which it delegates the cases it does not cover (other dtypes, rare layouts).
 */
export interface KernelOverride {
  name: string;
  /** Addon kernels it calls that older binaries lack: without them it is not registered. */
  needs?: readonly NativeKernelFn[];
  make(ctx: NativeContext, stock: KernelFunc): KernelFunc;
}

/** Casts our typed implementation to the engine's KernelFunc signature. */
export function asKernel(f: (args: KernelArgs) => TensorInfo | TensorInfo[]): KernelFunc {
  return f as unknown as KernelFunc;
}

export function callStock(stock: KernelFunc, args: KernelArgs): TensorInfo | TensorInfo[] {
  return stock(args as unknown as Parameters<KernelFunc>[0]);
}

export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
