import type { TensorInfo } from '@tensorflow/tfjs';
import type { ArrayContext } from '../arrays.ts';
import { asKernel, callStock, sizeOf, type KernelArgs, type KernelOverride } from './types.ts';

/**
 * PadV2 (Slice's gradient: the logits' [B, T-1, V] slice pads back to [B, T, V]) on the `native`
 * backend's arrays: fill with the constant, then one TypedArray.set (a memcpy) per contiguous run
 * of x. tfjs-backend-cpu's JS kernel maps every element's index (9 ms for the bench model's logits).
 * Typed-array contexts only; float32 and int32.
 */
export const padV2Arrays: KernelOverride = {
  name: 'PadV2',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { x } = args.inputs as { x: TensorInfo };
      const paddings = args.attrs['paddings'] as [number, number][];
      const rank = x.shape.length;
      if (ctx.binding !== 'typed' || (x.dtype !== 'float32' && x.dtype !== 'int32') || rank === 0)
        return callStock(stock, args);
      const c = ctx as ArrayContext;
      const backend = args.backend;
      const outShape = x.shape.map((d, i) => paddings[i]![0] + d + paddings[i]![1]);
      const out = c.output(backend, outShape, x.dtype); // x.shape grown by the paddings
      const o = c.values(backend, out);
      o.fill((args.attrs['constantValue'] as number | undefined) ?? 0);
      const xv = c.values(backend, x);
      if (xv.length === 0) return out;
      // Trailing dims without padding join the contiguous run of the last padded dim.
      let k = rank - 1;
      while (k > 0 && paddings[k]![0] === 0 && paddings[k]![1] === 0) k--;
      const run = sizeOf(x.shape.slice(k));
      const outStride = outShape.map((_, i) => sizeOf(outShape.slice(i + 1)));
      const rows = sizeOf(x.shape.slice(0, k));
      const idx = new Array<number>(k).fill(0);
      let dst = 0;
      for (let i = 0; i <= k; i++) dst += paddings[i]![0] * outStride[i]!;
      for (let r = 0; r < rows; r++) {
        o.set(xv.subarray(r * run, (r + 1) * run), dst);
        for (let d = k - 1; d >= 0; d--) {
          idx[d]!++;
          dst += outStride[d]!;
          if (idx[d]! < x.shape[d]!) break;
          dst -= outStride[d]! * x.shape[d]!;
          idx[d] = 0;
        }
      }
      return out;
    }),
};
