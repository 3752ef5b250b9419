import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs';
import type { WasmBackend } from './heap.ts';
import { off } from './heap.ts';
import { planMatMul } from './kernels/matmul.ts';
import { asKernel, callStock, sizeOf, type KernelArgs } from './kernels/types.ts';

/**
 * Pure-wasm BatchMatMul override for when the addon is absent. The stock wasm
 * kernel is fast (XNNPACK, ~15 GFLOP/s) only for a single non-transposed 2-D product and falls to
 * ~1 GFLOP/s with a transpose flag or a batch dim. So: transposes are done
 * with the (fast) stock Transpose kernel, a shared right operand folds the batch into rows, and
 * anything else runs one 2-D product per batch on zero-copy views registered over the operands'
 * and the output's heap memory.
 */
type WasmMatMul = (
  aId: number,
  aShape: Uint8Array,
  aRank: number,
  bId: number,
  bShape: Uint8Array,
  bRank: number,
  ta: boolean,
  tb: boolean,
  outId: number,
) => void;

interface CwrapModule {
  cwrap(name: string, ret: null, args: string[]): WasmMatMul;
}

const matMulFns = new WeakMap<WasmBackend, WasmMatMul>();

function rawMatMul(backend: WasmBackend): WasmMatMul {
  let f = matMulFns.get(backend);
  if (!f) {
    const args = ['number', 'array', 'number', 'number', 'array', 'number', 'number', 'number', 'number'];
    f = (backend.wasm as unknown as CwrapModule).cwrap('BatchMatMul', null, args);
    matMulFns.set(backend, f);
  }
  return f;
}

/** Registers a view of `size` elements at a byte offset with the wasm kernels; returns its id. */
function view(backend: WasmBackend, byteOffset: number, size: number): number {
  const id = backend.dataIdNextNumber++;
  backend.wasm.tfjs.registerTensor(id, size, byteOffset);
  return id;
}

function swapLast2(rank: number): number[] {
  const perm = Array.from({ length: rank }, (_, i) => i);
  [perm[rank - 2], perm[rank - 1]] = [rank - 1, rank - 2];
  return perm;
}

/** Per-batch multiply-adds below which the stock batched kernel is kept (measured: decode attention). */
const SPLIT_MIN_MACS = 16384;

const shapeBytes = (s: number[]): Uint8Array => new Uint8Array(new Int32Array(s).buffer);

export function makeFallbackBatchMatMul(stock: KernelFunc, stockTranspose: KernelFunc): KernelFunc {
  return asKernel((args: KernelArgs): TensorInfo | TensorInfo[] => {
    const { a, b } = args.inputs as { a: TensorInfo; b: TensorInfo };
    const ta = Boolean(args.attrs['transposeA']);
    const tb = Boolean(args.attrs['transposeB']);
    if (a.dtype !== 'float32' || b.dtype !== 'float32') return callStock(stock, args);
    const p = planMatMul(a.shape, b.shape, ta, tb);
    const batch = sizeOf(p.outBatch);
    const batchA = sizeOf(p.aBatch);
    const batchB = sizeOf(p.bBatch);
    if (batch <= 1 && !ta && !tb) return callStock(stock, args);
    // Tiny batched products (attention while decoding: [G, 1, hd] x [G, hd, T]) cost more in view
    // set-up per batch than the stock batched loop takes. Only without broadcasting: the stock kernel
    // gets mixed batch broadcasts such as [2,1] x [1,3] wrong (parity test).
    const sameBatch = p.aBatch.every((d, i) => d === p.bBatch[i]);
    if (batch > 1 && sameBatch && p.M * p.N * p.K < SPLIT_MIN_MACS) return callStock(stock, args);
    const backend = args.backend as WasmBackend; // the fallback serves the wasm backend only
    const temps: TensorInfo[] = [];
    const tr = (x: TensorInfo): TensorInfo => {
      const t = callStock(stockTranspose, {
        inputs: { x },
        backend,
        attrs: { perm: swapLast2(x.shape.length) },
      }) as TensorInfo; // last two dims swapped
      temps.push(t);
      return t;
    };
    const A = ta ? tr(a) : a; // [...batchA, M, K]
    const B = tb ? tr(b) : b; // [...batchB, K, N]
    const { M, N, K } = p;
    const out = backend.makeOutput(p.outShape, 'float32'); // [...batch, M, N]
    if (sizeOf(p.outShape) > 0) {
      const mm = rawMatMul(backend);
      if (batchB === 1 && batchA === batch) {
        // Shared right operand: one [batch*M, K] x [K, N] product.
        const ia = view(backend, off(backend, A), batch * M * K);
        const ib = view(backend, off(backend, B), K * N);
        const io = view(backend, off(backend, out), batch * M * N);
        mm(ia, shapeBytes([1, batch * M, K]), 3, ib, shapeBytes([1, K, N]), 3, false, false, io);
        for (const id of [ia, ib, io]) backend.wasm.tfjs.disposeData(id);
      } else {
        const r = p.outBatch.length;
        const idx = new Array<number>(r).fill(0);
        const aS = shapeBytes([1, M, K]);
        const bS = shapeBytes([1, K, N]);
        for (let o = 0; o < batch; o++) {
          // Broadcast: an operand's batch index ignores dims where it has size 1.
          let ja = 0;
          let jb = 0;
          for (let d = 0; d < r; d++) {
            ja = ja * p.aBatch[d]! + (p.aBatch[d] === 1 ? 0 : idx[d]!);
            jb = jb * p.bBatch[d]! + (p.bBatch[d] === 1 ? 0 : idx[d]!);
          }
          const ia = view(backend, off(backend, A) + ja * M * K * 4, M * K);
          const ib = view(backend, off(backend, B) + jb * K * N * 4, K * N);
          const io = view(backend, off(backend, out) + o * M * N * 4, M * N);
          mm(ia, aS, 3, ib, bS, 3, false, false, io);
          for (const id of [ia, ib, io]) backend.wasm.tfjs.disposeData(id);
          for (let d = r - 1; d >= 0; d--) {
            if (++idx[d]! < p.outBatch[d]!) break;
            idx[d] = 0;
          }
        }
      }
    }
    for (const t of temps) backend.disposeData(t.dataId);
    return out;
  });
}
