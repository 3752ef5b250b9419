import { backend_util } from '@tensorflow/tfjs';
import type { TensorInfo } from '@tensorflow/tfjs';
import { asKernel, callStock, sizeOf, type KernelArgs, type KernelOverride } from './types.ts';

export interface MatMulPlan {
  /** Output shape: broadcast batch dims + [M, N]. */
  outShape: number[];
  M: number;
  N: number;
  K: number;
  /** Output batch dims and the a/b batch dims left-padded with 1 to the same rank. */
  outBatch: number[];
  aBatch: number[];
  bBatch: number[];
}

/** Shapes of tf.matMul(a, b, transposeA, transposeB) with numpy broadcasting of the batch dims. */
export function planMatMul(aShape: readonly number[], bShape: readonly number[], ta: boolean, tb: boolean): MatMulPlan {
  const ra = aShape.length;
  const rb = bShape.length;
  if (ra < 2 || rb < 2)
    throw new Error(`BatchMatMul: operands must have rank >= 2, got [${aShape.join(',')}] and [${bShape.join(',')}]`);
  const M = ta ? aShape[ra - 1]! : aShape[ra - 2]!;
  const Ka = ta ? aShape[ra - 2]! : aShape[ra - 1]!;
  const Kb = tb ? bShape[rb - 1]! : bShape[rb - 2]!;
  const N = tb ? bShape[rb - 2]! : bShape[rb - 1]!;
  if (Ka !== Kb) {
    throw new Error(
      `BatchMatMul: inner dims ${Ka} and ${Kb} of [${aShape.join(',')}] and [${bShape.join(',')}] ` +
        `(transposeA=${ta}, transposeB=${tb}) differ`,
    );
  }
  const aOuter = aShape.slice(0, -2);
  const bOuter = bShape.slice(0, -2);
  const outBatch = backend_util.assertAndGetBroadcastShape(aOuter, bOuter);
  const r = outBatch.length;
  const pad = (s: number[]): number[] => [...new Array<number>(r - s.length).fill(1), ...s];
  return { outShape: [...outBatch, M, N], M, N, K: Ka, outBatch, aBatch: pad(aOuter), bBatch: pad(bOuter) };
}

/** BatchMatMul on OpenBLAS sgemm, zero-copy on the wasm heap (the biggest win). */
export const batchMatMulNative: KernelOverride = {
  name: 'BatchMatMul',
  make: (ctx, stock) =>
    asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
      const { a, b } = args.inputs as { a: TensorInfo; b: TensorInfo };
      const ta = Boolean(args.attrs['transposeA']);
      const tb = Boolean(args.attrs['transposeB']);
      if (a.dtype !== 'float32' || b.dtype !== 'float32') return callStock(stock, args);
      const p = planMatMul(a.shape, b.shape, ta, tb);
      const backend = args.backend;
      const out = ctx.output(backend, p.outShape, 'float32'); // [...batch, M, N]
      if (sizeOf(p.outShape) === 0) return out;
      const A = ctx.args;
      const r = p.outBatch.length;
      A[0] = ctx.ref(backend, a);
      A[1] = ctx.ref(backend, b);
      A[2] = ctx.ref(backend, out);
      A[3] = p.M;
      A[4] = p.N;
      A[5] = p.K;
      A[6] = ta ? 1 : 0;
      A[7] = tb ? 1 : 0;
      A[8] = r;
      for (let i = 0; i < r; i++) {
        A[9 + i] = p.outBatch[i]!;
        A[9 + r + i] = p.aBatch[i]!;
        A[9 + 2 * r + i] = p.bBatch[i]!;
      }
      ctx.run(backend, 'matmul', 'BatchMatMul');
      return out;
    }),
};
