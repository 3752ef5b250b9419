import { backend_util } from '@tensorflow/tfjs';
import type { TensorInfo } from '@tensorflow/tfjs';
import { asKernel, callStock, sizeOf, type KernelArgs, type KernelOverride } from './types.ts';

/** Op codes shared with native/src/elementwise.cc (enum BinOp / UnOp). */
const BINARY: Record<string, number> = {
  Add: 0,
  Sub: 1,
  Multiply: 2,
  RealDiv: 3,
  Maximum: 4,
  Minimum: 5,
  SquaredDifference: 6,
  Pow: 7,
};
/** Comparisons: float32 or int32 operands (same dtype), bool output (sampling masks, causal masks). */
const COMPARE: Record<string, number> = {
  Less: 16,
  LessEqual: 17,
  Greater: 18,
  GreaterEqual: 19,
  Equal: 20,
  NotEqual: 21,
};
const UNARY: Record<string, number> = {
  Exp: 0,
  Log: 1,
  Neg: 2,
  Sqrt: 3,
  Rsqrt: 4,
  Square: 5,
  Sigmoid: 6,
  Tanh: 7,
  Abs: 8,
  Relu: 9,
  Reciprocal: 10,
  Sin: 11,
  Cos: 12,
  Log1p: 13,
  Softplus: 14,
};

function binaryOverride(name: string, code: number, compare: boolean): KernelOverride {
  return {
    name,
    make: (ctx, stock) =>
      asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
        const { a, b } = args.inputs as { a: TensorInfo; b: TensorInfo };
        // int32/bool arithmetic keeps the stock kernel (its dtype rules, e.g. int division).
        const ok = compare
          ? a.dtype === b.dtype && (a.dtype === 'float32' || a.dtype === 'int32')
          : a.dtype === 'float32' && b.dtype === 'float32';
        if (!ok) return callStock(stock, args);
        const outShape = backend_util.assertAndGetBroadcastShape(a.shape, b.shape);
        const rank = outShape.length;
        if (rank > 8) return callStock(stock, args);
        const backend = args.backend;
        const out = ctx.output(backend, outShape, compare ? 'bool' : 'float32'); // broadcast(a, b)
        if (sizeOf(outShape) === 0) return out;
        const A = ctx.args;
        A[0] = code;
        A[1] = ctx.ref(backend, a);
        A[2] = ctx.ref(backend, b);
        A[3] = ctx.ref(backend, out);
        A[4] = rank;
        for (let i = 0; i < rank; i++) {
          A[5 + i] = outShape[i]!;
          A[5 + rank + i] = i < rank - a.shape.length ? 1 : a.shape[i - (rank - a.shape.length)]!;
          A[5 + 2 * rank + i] = i < rank - b.shape.length ? 1 : b.shape[i - (rank - b.shape.length)]!;
        }
        A[5 + 3 * rank] = a.dtype === 'int32' ? 1 : 0;
        ctx.run(backend, 'binary', name);
        return out;
      }),
  };
}

function unaryOverride(name: string, code: number): KernelOverride {
  return {
    name,
    make: (ctx, stock) =>
      asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
        const { x } = args.inputs as { x: TensorInfo };
        if (x.dtype !== 'float32') return callStock(stock, args);
        const backend = args.backend;
        const out = ctx.output(backend, x.shape, 'float32'); // same shape as x
        const n = sizeOf(x.shape);
        if (n === 0) return out;
        const A = ctx.args;
        A[0] = code;
        A[1] = ctx.ref(backend, x);
        A[2] = ctx.ref(backend, out);
        A[3] = n;
        ctx.run(backend, 'unary', name);
        return out;
      }),
  };
}

/**
 * Identity (tf.clone) shares the buffer and counts a reference, as the wasm Reshape and the cpu
 * backend's Identity do; the stock wasm Identity copies (6 % of the bench train step). Nothing in
 * tfjs writes a buffer in place; nativeAdamW does, and copies a weight first when its buffer is
 * shared (refCount > 1), so a clone made as a snapshot never changes (tested).
 */
const identity: KernelOverride = {
  name: 'Identity',
  make: (_ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { x } = args.inputs as { x: TensorInfo };
      if (x.dtype === 'string') return callStock(stock, args);
      args.backend.incRef(x.dataId);
      return { dataId: x.dataId, shape: [...x.shape], dtype: x.dtype };
    }),
};

/** AddN (gradient accumulation of a tensor used several times). */
const addN: KernelOverride = {
  name: 'AddN',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const inputs = args.inputs as unknown as TensorInfo[];
      const first = inputs[0];
      if (!first || inputs.some((t) => t.dtype !== 'float32') || inputs.length > 1000) return callStock(stock, args);
      const backend = args.backend;
      const out = ctx.output(backend, first.shape, 'float32'); // same shape as every input
      const n = sizeOf(first.shape);
      if (n === 0) return out;
      const A = ctx.args;
      A[0] = ctx.ref(backend, out);
      A[1] = n;
      A[2] = inputs.length;
      inputs.forEach((t, k) => (A[3 + k] = ctx.ref(backend, t)));
      ctx.run(backend, 'addN', 'AddN');
      return out;
    }),
};

/** Select (tf.where) when condition, t and e have one shape; other layouts keep the stock kernel. */
const select: KernelOverride = {
  name: 'Select',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { condition, t, e } = args.inputs as { condition: TensorInfo; t: TensorInfo; e: TensorInfo };
      const n = sizeOf(t.shape);
      if (
        t.dtype !== 'float32' ||
        e.dtype !== 'float32' ||
        condition.dtype !== 'bool' ||
        sizeOf(condition.shape) !== n ||
        sizeOf(e.shape) !== n
      ) {
        return callStock(stock, args);
      }
      const backend = args.backend;
      const out = ctx.output(backend, t.shape, 'float32'); // same shape as t
      if (n === 0) return out;
      const A = ctx.args;
      A[0] = ctx.ref(backend, condition);
      A[1] = ctx.ref(backend, t);
      A[2] = ctx.ref(backend, e);
      A[3] = ctx.ref(backend, out);
      A[4] = n;
      ctx.run(backend, 'select', 'Select');
      return out;
    }),
};

export const elementwiseNative: KernelOverride[] = [
  ...Object.entries(BINARY).map(([name, code]) => binaryOverride(name, code, false)),
  ...Object.entries(COMPARE).map(([name, code]) => binaryOverride(name, code, true)),
  identity,
  ...Object.entries(UNARY).map(([name, code]) => unaryOverride(name, code)),
  addN,
  select,
];
