import { util } from '@tensorflow/tfjs';
import type { TensorInfo } from '@tensorflow/tfjs';
import type { ArrayContext } from '../arrays.ts';
import { asKernel, callStock, sizeOf, type KernelArgs, type KernelOverride } from './types.ts';

/**
 * Decoding's per-step selections, the fills and the embedding gradient's scatter on the `native` backend's arrays, in
 * TypeScript loops over the TypedArrays (the wasm backend has C++ kernels for these; tfjs-backend-cpu's JS ones
 * sort whole rows or map every index, which costs ~1-2 ms per [8, 2000] row block and grows with
 * the vocabulary). Typed-array contexts only; other cases keep the stock kernel.
 */
const arraysOf = (ctx: { binding: string }): ArrayContext | undefined =>
  ctx.binding === 'typed' ? (ctx as ArrayContext) : undefined;

/** ArgMax over the last axis, float32: the first index of the largest value (NaN never wins), as tfjs-backend-cpu. */
const argMaxArrays: KernelOverride = {
  name: 'ArgMax',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { x } = args.inputs as { x: TensorInfo };
      const c = arraysOf(ctx);
      const rank = x.shape.length;
      const axis = rank > 0 ? util.parseAxisParam(args.attrs['axis'] as number | number[], x.shape) : [];
      if (
        !c ||
        x.dtype !== 'float32' ||
        rank === 0 ||
        axis.length !== 1 ||
        axis[0] !== rank - 1 ||
        x.shape[rank - 1] === 0
      )
        return callStock(stock, args);
      const backend = args.backend;
      const n = x.shape[rank - 1]!;
      const out = c.output(backend, x.shape.slice(0, -1), 'int32'); // x.shape without the last axis
      const o = c.values(backend, out);
      const v = c.values(backend, x);
      for (let r = 0; r < o.length; r++) {
        const base = r * n;
        let best = v[base]!;
        let at = 0;
        for (let i = 1; i < n; i++) {
          const y = v[base + i]!;
          if (y > best) {
            best = y;
            at = i;
          }
        }
        o[r] = at;
      }
      return out;
    }),
};

/** Beyond this k the insertion keeps stock tfjs's quickselect (sampling uses k of tens). */
const TOPK_MAX = 1024;

/**
 * TopK over the last axis, float32, sorted: the k largest values in descending order, equal values
 * by ascending index (tfjs's order), kept in an insertion-sorted list per row (one compare per
 * element once the list is full).
 */
const topKArrays: KernelOverride = {
  name: 'TopK',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { x } = args.inputs as { x: TensorInfo };
      const k = args.attrs['k'] as number;
      const c = arraysOf(ctx);
      const rank = x.shape.length;
      if (
        !c ||
        x.dtype !== 'float32' ||
        rank === 0 ||
        args.attrs['sorted'] === false ||
        k < 1 ||
        k > TOPK_MAX ||
        k > x.shape[rank - 1]!
      )
        return callStock(stock, args);
      const backend = args.backend;
      const n = x.shape[rank - 1]!;
      const outShape = [...x.shape.slice(0, -1), k];
      const values = c.output(backend, outShape, 'float32'); // [..., k]
      const indices = c.output(backend, [...outShape], 'int32'); // [..., k]
      const ov = c.values(backend, values);
      const oi = c.values(backend, indices);
      const v = c.values(backend, x);
      const rows = sizeOf(x.shape) / n;
      for (let r = 0; r < rows; r++) {
        const base = r * n;
        const at = r * k;
        let count = 0;
        for (let i = 0; i < n; i++) {
          const y = v[base + i]!;
          if (count === k && !(y > ov[at + k - 1]!)) continue; // not above the k-th: a later equal value ranks lower
          if (y !== y) continue; // NaN
          let pos = count < k ? count++ : k - 1;
          while (pos > 0 && ov[at + pos - 1]! < y) {
            ov[at + pos] = ov[at + pos - 1]!;
            oi[at + pos] = oi[at + pos - 1]!;
            pos--;
          }
          ov[at + pos] = y;
          oi[at + pos] = i;
        }
        if (count < k) return disposeAndStock(backend, [values, indices], stock, args); // NaNs left the row short
      }
      return [values, indices];
    }),
};

function disposeAndStock(
  backend: KernelArgs['backend'],
  outs: TensorInfo[],
  stock: Parameters<KernelOverride['make']>[1],
  args: KernelArgs,
): TensorInfo | TensorInfo[] {
  for (const t of outs) backend.disposeData(t.dataId);
  return callStock(stock, args);
}

/** ZerosLike and OnesLike, float32 and int32: one TypedArray.fill. */
function likeArrays(name: 'ZerosLike' | 'OnesLike', value: number): KernelOverride {
  return {
    name,
    make: (ctx, stock) =>
      asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
        const { x } = args.inputs as { x: TensorInfo };
        const c = arraysOf(ctx);
        if (!c || (x.dtype !== 'float32' && x.dtype !== 'int32')) return callStock(stock, args);
        const out = c.output(args.backend, [...x.shape], x.dtype); // same shape as x
        c.values(args.backend, out).fill(value);
        return out;
      }),
  };
}

/** Fill (tf.fill, tf.zeros, tf.ones), float32 and int32: one TypedArray.fill. */
const fillArrays: KernelOverride = {
  name: 'Fill',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const c = arraysOf(ctx);
      const dtype = args.attrs['dtype'] as string;
      const value = args.attrs['value'];
      if (!c || (dtype !== 'float32' && dtype !== 'int32') || typeof value !== 'number') return callStock(stock, args);
      const out = c.output(args.backend, [...(args.attrs['shape'] as number[])], dtype); // the shape asked for
      c.values(args.backend, out).fill(value);
      return out;
    }),
};

/**
 * ScatterNd (the embedding's gradient: distinct rows into the [V, D] table), float32 updates, int32
 * indices: zeros, then each update slice added at its index (duplicates sum, as tfjs). Any index out
 * of range leaves it to the stock kernel, which reports it.
 */
const scatterNdArrays: KernelOverride = {
  name: 'ScatterNd',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { indices, updates } = args.inputs as { indices: TensorInfo; updates: TensorInfo };
      const shape = args.attrs['shape'] as number[];
      const c = arraysOf(ctx);
      const sliceRank = indices.shape[indices.shape.length - 1] ?? 0;
      if (
        !c ||
        updates.dtype !== 'float32' ||
        indices.dtype !== 'int32' ||
        indices.shape.length === 0 ||
        sliceRank < 1 ||
        sliceRank > shape.length
      )
        return callStock(stock, args);
      const backend = args.backend;
      const numUpdates = sizeOf(indices.shape) / sliceRank;
      const sliceSize = sizeOf(shape.slice(sliceRank));
      const strides = shape.slice(0, sliceRank).map((_, i) => sizeOf(shape.slice(i + 1, sliceRank)));
      const idx = c.values(backend, indices);
      const starts = new Float64Array(numUpdates);
      for (let u = 0; u < numUpdates; u++) {
        let flat = 0;
        for (let j = 0; j < sliceRank; j++) {
          const i = idx[u * sliceRank + j]!;
          if (i < 0 || i >= shape[j]!) return callStock(stock, args);
          flat += i * strides[j]!;
        }
        starts[u] = flat * sliceSize;
      }
      const out = c.output(backend, [...shape], 'float32'); // the shape asked for
      const o = c.values(backend, out);
      o.fill(0);
      const upd = c.values(backend, updates);
      for (let u = 0; u < numUpdates; u++) {
        const dst = starts[u]!;
        const src = u * sliceSize;
        for (let i = 0; i < sliceSize; i++) o[dst + i]! += upd[src + i]!;
      }
      return out;
    }),
};

export const selectionArrays: KernelOverride[] = [
  scatterNdArrays,
  argMaxArrays,
  topKArrays,
  likeArrays('ZerosLike', 0),
  likeArrays('OnesLike', 1),
  fillArrays,
];
