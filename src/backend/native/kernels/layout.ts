import { backend_util, slice_util, util } from '@tensorflow/tfjs';
import type { TensorInfo } from '@tensorflow/tfjs';
import type { KernelBackend, NativeContext } from '../context.ts';
import { asKernel, callStock, sizeOf, type KernelArgs, type KernelOverride } from './types.ts';

/** Element types whose elements are 4 bytes: the layout kernels copy them without looking. */
const fourByte = (t: TensorInfo): boolean => t.dtype === 'float32' || t.dtype === 'int32';

/** Native transpose of x into a new tensor (also used by the reductions). */
export function nativeTranspose(
  ctx: NativeContext,
  backend: KernelBackend,
  x: TensorInfo,
  perm: readonly number[],
): TensorInfo {
  const outShape = perm.map((p) => x.shape[p]!);
  const out = ctx.output(backend, outShape, x.dtype); // x.shape permuted
  if (sizeOf(outShape) === 0) return out;
  const A = ctx.args;
  const rank = x.shape.length;
  A[0] = ctx.ref(backend, x);
  A[1] = ctx.ref(backend, out);
  A[2] = rank;
  for (let i = 0; i < rank; i++) {
    A[3 + i] = x.shape[i]!;
    A[3 + rank + i] = perm[i]!;
  }
  A[3 + 2 * rank] = x.dtype === 'float32' ? 1 : 0;
  ctx.run(backend, 'transpose', 'Transpose');
  return out;
}

/** Native slice with begin/size already normalised. */
function nativeSlice(
  ctx: NativeContext,
  backend: KernelBackend,
  x: TensorInfo,
  begin: readonly number[],
  size: readonly number[],
): TensorInfo {
  const out = ctx.output(backend, [...size], x.dtype); // size
  if (sizeOf(size) === 0) return out;
  const A = ctx.args;
  const rank = x.shape.length;
  A[0] = ctx.ref(backend, x);
  A[1] = ctx.ref(backend, out);
  A[2] = rank;
  for (let i = 0; i < rank; i++) {
    A[3 + i] = x.shape[i]!;
    A[3 + rank + i] = begin[i]!;
    A[3 + 2 * rank + i] = size[i]!;
  }
  ctx.run(backend, 'slice', 'Slice');
  return out;
}

const transpose: KernelOverride = {
  name: 'Transpose',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const { x } = args.inputs as { x: TensorInfo };
      const perm = args.attrs['perm'] as number[];
      if (!fourByte(x) || x.shape.length > 8 || x.shape.length === 0) return callStock(stock, args);
      return nativeTranspose(ctx, args.backend, x, perm);
    }),
};

const slice: KernelOverride = {
  name: 'Slice',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const { x } = args.inputs as { x: TensorInfo };
      if (!fourByte(x) || x.shape.length > 8 || x.shape.length === 0) return callStock(stock, args);
      const [begin, size] = slice_util.parseSliceParams(
        x,
        args.attrs['begin'] as number[],
        args.attrs['size'] as number[],
      );
      return nativeSlice(ctx, args.backend, x, begin, size);
    }),
};

const splitV: KernelOverride = {
  name: 'SplitV',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const { x } = args.inputs as { x: TensorInfo };
      if (!fourByte(x) || x.shape.length > 8 || x.shape.length === 0) return callStock(stock, args);
      const axis = util.parseAxisParam(args.attrs['axis'] as number, x.shape)[0]!;
      const sizes = backend_util.prepareSplitSize(
        x as unknown as Parameters<typeof backend_util.prepareSplitSize>[0],
        args.attrs['numOrSizeSplits'] as number[] | number,
        axis,
      );
      const begin = new Array<number>(x.shape.length).fill(0);
      return sizes.map((s) => {
        const size = [...x.shape];
        size[axis] = s;
        const part = nativeSlice(ctx, args.backend, x, begin, size); // x.shape with size s on axis
        begin[axis]! += s;
        return part;
      });
    }),
};

const concat: KernelOverride = {
  name: 'Concat',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const inputs = args.inputs as unknown as TensorInfo[];
      const first = inputs[0];
      if (!first || !inputs.every((t) => fourByte(t) && t.dtype === first.dtype) || inputs.length > 4000)
        return callStock(stock, args);
      const axis = util.parseAxisParam(args.attrs['axis'] as number, first.shape)[0]!;
      backend_util.assertParamsConsistent(
        inputs.map((t) => t.shape),
        axis,
      );
      const outShape = backend_util.computeOutShape(
        inputs.map((t) => t.shape),
        axis,
      );
      const parts = inputs.filter((t) => sizeOf(t.shape) > 0);
      if (parts.length <= 1) return callStock(stock, args);
      const backend = args.backend;
      const out = ctx.output(backend, outShape, first.dtype); // inputs joined on axis
      concatRows(ctx, backend, out, sizeOf(first.shape.slice(0, axis)), parts, (t) => sizeOf(t.shape.slice(axis)));
      return out;
    }),
};

/** Concatenates same-dtype 4-byte tensors seen as [outer, inner_i] rows into `out`. */
function concatRows(
  ctx: NativeContext,
  backend: KernelBackend,
  out: TensorInfo,
  outer: number,
  parts: readonly TensorInfo[],
  inner: (t: TensorInfo) => number,
): void {
  const A = ctx.args;
  A[0] = ctx.ref(backend, out);
  A[1] = outer;
  A[2] = parts.length;
  parts.forEach((t, k) => {
    A[3 + 2 * k] = ctx.ref(backend, t);
    A[4 + 2 * k] = inner(t);
  });
  ctx.run(backend, 'concat', 'Concat');
}

/** Pack (tf.stack): a concat of the inputs with a new axis; the stock kernel runs a JS copy loop. */
const pack: KernelOverride = {
  name: 'Pack',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const inputs = args.inputs as unknown as TensorInfo[];
      const first = inputs[0];
      if (
        !first ||
        inputs.length < 2 ||
        inputs.length > 4000 ||
        !inputs.every((t) => fourByte(t) && t.dtype === first.dtype && t.shape.join(',') === first.shape.join(','))
      ) {
        return callStock(stock, args);
      }
      const rank = first.shape.length;
      const axis = util.parseAxisParam(args.attrs['axis'] as number, [...first.shape, 1])[0]!;
      const outShape = [...first.shape.slice(0, axis), inputs.length, ...first.shape.slice(axis)];
      const backend = args.backend;
      const out = ctx.output(backend, outShape, first.dtype); // inputs stacked on a new axis
      if (sizeOf(outShape) === 0 || rank > 7) {
        if (sizeOf(outShape) === 0) return out;
        backend.disposeData(out.dataId);
        return callStock(stock, args);
      }
      const inner = sizeOf(first.shape.slice(axis));
      concatRows(ctx, backend, out, sizeOf(first.shape.slice(0, axis)), inputs, () => inner);
      return out;
    }),
};

const gatherV2: KernelOverride = {
  name: 'GatherV2',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const { x, indices } = args.inputs as { x: TensorInfo; indices: TensorInfo };
      const batchDims = (args.attrs['batchDims'] as number | undefined) ?? 0;
      if (!fourByte(x) || indices.dtype !== 'int32' || batchDims !== 0) return callStock(stock, args);
      const axis = util.parseAxisParam(args.attrs['axis'] as number, x.shape)[0]!;
      const outShape = [...x.shape.slice(0, axis), ...indices.shape, ...x.shape.slice(axis + 1)];
      const backend = args.backend;
      const out = ctx.output(backend, outShape, x.dtype); // x.shape with indices.shape in place of axis
      if (sizeOf(outShape) === 0) return out;
      const A = ctx.args;
      A[0] = ctx.ref(backend, x);
      A[1] = ctx.ref(backend, indices);
      A[2] = ctx.ref(backend, out);
      A[3] = sizeOf(x.shape.slice(0, axis));
      A[4] = x.shape[axis]!;
      A[5] = sizeOf(x.shape.slice(axis + 1));
      A[6] = sizeOf(indices.shape);
      const code = ctx.call(backend, 'gather');
      if (code !== 0) {
        backend.disposeData(out.dataId);
        ctx.check(code, 'GatherV2');
      }
      return out;
    }),
};

/** Gradient of gather (tfjs core's GatherV2 grad); the stock wasm backend has no such kernel. */
const unsortedSegmentSum: KernelOverride = {
  name: 'UnsortedSegmentSum',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const { x, segmentIds } = args.inputs as { x: TensorInfo; segmentIds: TensorInfo };
      const numSegments = args.attrs['numSegments'] as number;
      if (x.dtype !== 'float32' || segmentIds.dtype !== 'int32') return callStock(stock, args);
      const n = sizeOf(segmentIds.shape);
      const innerShape = x.shape.slice(segmentIds.shape.length);
      const backend = args.backend;
      const out = ctx.output(backend, [numSegments, ...innerShape], 'float32'); // [numSegments, ...inner]
      if (sizeOf(out.shape) === 0) return out;
      const A = ctx.args;
      A[0] = ctx.ref(backend, x);
      A[1] = ctx.ref(backend, segmentIds);
      A[2] = ctx.ref(backend, out);
      A[3] = n;
      A[4] = sizeOf(innerShape);
      A[5] = numSegments;
      ctx.run(backend, 'segmentSum', 'UnsortedSegmentSum');
      return out;
    }),
};

const oneHot: KernelOverride = {
  name: 'OneHot',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const { indices } = args.inputs as { indices: TensorInfo };
      const depth = args.attrs['depth'] as number;
      const dtype = (args.attrs['dtype'] as string | undefined) ?? 'float32';
      if (indices.dtype !== 'int32' || (dtype !== 'float32' && dtype !== 'int32')) return callStock(stock, args);
      const backend = args.backend;
      const out = ctx.output(backend, [...indices.shape, depth], dtype); // [...indices, depth]
      if (sizeOf(out.shape) === 0) return out;
      const A = ctx.args;
      A[0] = ctx.ref(backend, indices);
      A[1] = ctx.ref(backend, out);
      A[2] = sizeOf(indices.shape);
      A[3] = depth;
      A[4] = (args.attrs['onValue'] as number | undefined) ?? 1;
      A[5] = (args.attrs['offValue'] as number | undefined) ?? 0;
      A[6] = dtype === 'int32' ? 1 : 0;
      ctx.run(backend, 'oneHot', 'OneHot');
      return out;
    }),
};

const DTYPE_CODE: Record<string, number> = { float32: 0, int32: 1, bool: 2 };

/** Cast between float32, int32 and bool (tfjs semantics: truncation toward zero; bool is x != 0). */
const cast: KernelOverride = {
  name: 'Cast',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs) => {
      const { x } = args.inputs as { x: TensorInfo };
      const dtype = args.attrs['dtype'] as string;
      const from = DTYPE_CODE[x.dtype];
      const to = DTYPE_CODE[dtype];
      if (from === undefined || to === undefined) return callStock(stock, args);
      const backend = args.backend;
      if (from === to) {
        // Same dtype: share the buffer like Identity (a cast never writes).
        backend.incRef(x.dataId);
        return { dataId: x.dataId, shape: [...x.shape], dtype: x.dtype };
      }
      const out = ctx.output(backend, [...x.shape], dtype); // same shape, new dtype
      const n = sizeOf(x.shape);
      if (n === 0) return out;
      ctx.invoke(backend, 'cast', 'Cast', [x, out], [n, from, to]);
      return out;
    }),
};

export const layoutNative: KernelOverride[] = [
  cast,
  transpose,
  slice,
  splitV,
  concat,
  pack,
  gatherV2,
  unsortedSegmentSum,
  oneHot,
];
