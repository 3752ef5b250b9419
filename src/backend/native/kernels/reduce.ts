import { backend_util, util } from '@tensorflow/tfjs';
import type { TensorInfo } from '@tensorflow/tfjs';
import { nativeTranspose } from './layout.ts';
import { asKernel, callStock, sizeOf, type KernelArgs, type KernelOverride } from './types.ts';

/** Op codes shared with native/src/reduce.cc (enum RedOp). */
const REDUCE: { name: string; code: number; axisAttr: string }[] = [
  { name: 'Sum', code: 0, axisAttr: 'axis' },
  { name: 'Max', code: 1, axisAttr: 'reductionIndices' },
  { name: 'Min', code: 2, axisAttr: 'axis' },
  { name: 'Mean', code: 3, axisAttr: 'axis' },
  { name: 'Prod', code: 4, axisAttr: 'axis' },
];

/**
 * [outer, red, inner] view of x for reducing `axes` when they form one contiguous block (sorted);
 * undefined when they do not (the caller transposes them to the end first).
 */
export function reduceView(shape: readonly number[], axes: readonly number[]): [number, number, number] | undefined {
  if (axes.length === 0) return [sizeOf(shape), 1, 1];
  for (let i = 1; i < axes.length; i++) if (axes[i] !== axes[i - 1]! + 1) return undefined;
  const a0 = axes[0]!;
  const a1 = axes[axes.length - 1]!;
  return [sizeOf(shape.slice(0, a0)), sizeOf(shape.slice(a0, a1 + 1)), sizeOf(shape.slice(a1 + 1))];
}

function reduceOverride(name: string, code: number, axisAttr: string): KernelOverride {
  return {
    name,
    make: (ctx, stock) =>
      asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
        const { x } = args.inputs as { x: TensorInfo };
        const int = x.dtype === 'int32' && code === 0 && ctx.binding === 'typed'; // int32 Sum (sampling's counts)
        if ((x.dtype !== 'float32' && !int) || x.shape.length > 8) return callStock(stock, args);
        const backend = args.backend;
        const axes = [...util.parseAxisParam(args.attrs[axisAttr] as number | number[], x.shape)].sort((p, q) => p - q);
        const [outShape] = backend_util.computeOutAndReduceShapes(x.shape, axes);
        const keepDims = Boolean(args.attrs['keepDims']);
        const finalShape = keepDims ? backend_util.expandShapeToKeepDim(outShape, axes) : outShape;
        let input = x;
        let view = reduceView(x.shape, axes);
        if (!view) {
          // Move the reduced axes to the end (one native transpose), then reduce the inner block.
          const perm = backend_util.getAxesPermutation(axes, x.shape.length)!;
          input = nativeTranspose(ctx, backend, x, perm); // x.shape permuted, reduced axes last
          view = [sizeOf(outShape), sizeOf(x.shape) / Math.max(1, sizeOf(outShape)), 1];
        }
        const out = ctx.output(backend, finalShape, x.dtype); // x.shape without (or with 1 at) axes
        if (sizeOf(finalShape) > 0) {
          const A = ctx.args;
          A[0] = code;
          A[1] = ctx.ref(backend, input);
          A[2] = ctx.ref(backend, out);
          [A[3], A[4], A[5]] = view;
          A[6] = int ? 1 : 0;
          ctx.run(backend, 'reduce', name);
        }
        if (input !== x) backend.disposeData(input.dataId);
        return out;
      }),
  };
}

/** Softmax over the last dim (tfjs core only emits dim = -1). */
const softmax: KernelOverride = {
  name: 'Softmax',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { logits } = args.inputs as { logits: TensorInfo };
      const rank = logits.shape.length;
      const dim = args.attrs['dim'] as number;
      if (logits.dtype !== 'float32' || rank === 0 || (dim !== -1 && dim !== rank - 1)) return callStock(stock, args);
      const backend = args.backend;
      const out = ctx.output(backend, logits.shape, 'float32'); // same shape as logits
      const n = sizeOf(logits.shape);
      if (n === 0) return out;
      const A = ctx.args;
      const cols = logits.shape[rank - 1]!;
      A[0] = ctx.ref(backend, logits);
      A[1] = ctx.ref(backend, out);
      A[2] = n / cols;
      A[3] = cols;
      ctx.run(backend, 'softmax', 'Softmax');
      return out;
    }),
};

export const reduceNative: KernelOverride[] = [
  ...REDUCE.map((r) => reduceOverride(r.name, r.code, r.axisAttr)),
  softmax,
];

/**
 * Cumsum (sampling's cumulative probabilities, RoPE positions), float32: the same sequential float32 sums as the
 * wasm backend's own, in one pass without its transposes (a decode step's [B, V] sampling CDF took 5% of the step).
 */
export const cumsumNative: KernelOverride = {
  name: 'Cumsum',
  // binaries older than the heap binding's cumsum keep the wasm backend's own
  make: (ctx, stock) =>
    !ctx.has('cumsum')
      ? stock
      : asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
          const { x } = args.inputs as { x: TensorInfo };
          if (x.dtype !== 'float32' || x.shape.length === 0) return callStock(stock, args);
          const axis = util.parseAxisParam(args.attrs['axis'] as number, x.shape)[0]!;
          const backend = args.backend;
          const out = ctx.output(backend, [...x.shape], 'float32'); // same shape as x
          if (sizeOf(x.shape) === 0) return out;
          const A = ctx.args;
          A[0] = ctx.ref(backend, x);
          A[1] = ctx.ref(backend, out);
          A[2] = sizeOf(x.shape.slice(0, axis));
          A[3] = x.shape[axis]!;
          A[4] = sizeOf(x.shape.slice(axis + 1));
          A[5] = args.attrs['exclusive'] ? 1 : 0;
          A[6] = args.attrs['reverse'] ? 1 : 0;
          ctx.run(backend, 'cumsum', 'Cumsum');
          return out;
        }),
};
