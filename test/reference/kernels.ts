/**
 * Float64 reference implementations of the overridden kernels, written from the definitions (numpy
 * broadcasting, row-major layout) independently of tfjs: the parity tests compare the native
 * kernels to these, never to another tfjs backend (the stock cpu backend is wrong on mixed
 * broadcasts such as [2,1] x [1,3]).
 */
export interface Arr {
  data: Float64Array;
  shape: number[];
}

export const size = (s: readonly number[]): number => s.reduce((p, d) => p * d, 1);

function strides(shape: readonly number[]): number[] {
  const st = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= shape[i]!;
  }
  return st;
}

/** Multi-index of flat position `flat` in `shape`. */
function unravel(flat: number, shape: readonly number[]): number[] {
  const idx = new Array<number>(shape.length);
  for (let i = shape.length - 1; i >= 0; i--) {
    idx[i] = flat % shape[i]!;
    flat = Math.floor(flat / shape[i]!);
  }
  return idx;
}

/** numpy broadcast of two shapes. */
function broadcastShape(a: readonly number[], b: readonly number[]): number[] {
  const r = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < r; i++) {
    const da = a[a.length - r + i] ?? 1;
    const db = b[b.length - r + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1)
      throw new Error(`reference: shapes [${a.join(',')}] and [${b.join(',')}] do not broadcast`);
    out.push(da === 1 ? db : da);
  }
  return out;
}

/** Flat index into an operand of shape `s` for output multi-index `idx` (broadcast dims pinned to 0). */
function bIndex(idx: readonly number[], s: readonly number[]): number {
  const off = idx.length - s.length;
  let f = 0;
  for (let i = 0; i < s.length; i++) f = f * s[i]! + (s[i] === 1 ? 0 : idx[off + i]!);
  return f;
}

export function binaryRef(f: (x: number, y: number) => number, a: Arr, b: Arr): Arr {
  const shape = broadcastShape(a.shape, b.shape);
  const data = new Float64Array(size(shape));
  for (let k = 0; k < data.length; k++) {
    const idx = unravel(k, shape);
    data[k] = f(a.data[bIndex(idx, a.shape)]!, b.data[bIndex(idx, b.shape)]!);
  }
  return { data, shape };
}

export function matmulRef(a: Arr, b: Arr, ta: boolean, tb: boolean): Arr {
  const ra = a.shape.length;
  const rb = b.shape.length;
  const M = ta ? a.shape[ra - 1]! : a.shape[ra - 2]!;
  const K = ta ? a.shape[ra - 2]! : a.shape[ra - 1]!;
  const N = tb ? b.shape[rb - 2]! : b.shape[rb - 1]!;
  const aB = a.shape.slice(0, -2);
  const bB = b.shape.slice(0, -2);
  const batch = broadcastShape(aB, bB);
  const shape = [...batch, M, N];
  const data = new Float64Array(size(shape));
  for (let o = 0; o < size(batch); o++) {
    const idx = unravel(o, batch);
    const ia = bIndex(idx, aB) * M * K;
    const ib = bIndex(idx, bB) * K * N;
    for (let i = 0; i < M; i++)
      for (let j = 0; j < N; j++) {
        let s = 0;
        for (let k = 0; k < K; k++)
          s += a.data[ia + (ta ? k * M + i : i * K + k)]! * b.data[ib + (tb ? j * K + k : k * N + j)]!;
        data[o * M * N + i * N + j] = s;
      }
  }
  return { data, shape };
}

export function transposeRef(x: Arr, perm: readonly number[]): Arr {
  const shape = perm.map((p) => x.shape[p]!);
  const st = strides(x.shape);
  const data = new Float64Array(size(shape));
  for (let k = 0; k < data.length; k++) {
    const idx = unravel(k, shape);
    let src = 0;
    perm.forEach((p, j) => (src += idx[j]! * st[p]!));
    data[k] = x.data[src]!;
  }
  return { data, shape };
}

export function sliceRef(x: Arr, begin: readonly number[], sz: readonly number[]): Arr {
  const st = strides(x.shape);
  const data = new Float64Array(size(sz));
  for (let k = 0; k < data.length; k++) {
    const idx = unravel(k, sz);
    let src = 0;
    idx.forEach((v, j) => (src += (v + begin[j]!) * st[j]!));
    data[k] = x.data[src]!;
  }
  return { data, shape: [...sz] };
}

export function concatRef(xs: readonly Arr[], axis: number): Arr {
  const shape = [...xs[0]!.shape];
  shape[axis] = xs.reduce((s, x) => s + x.shape[axis]!, 0);
  const data = new Float64Array(size(shape));
  for (let k = 0; k < data.length; k++) {
    const idx = unravel(k, shape);
    let pos = idx[axis]!;
    for (const x of xs) {
      if (pos < x.shape[axis]!) {
        const j = [...idx];
        j[axis] = pos;
        data[k] = x.data[j.reduce((f, v, d) => f * x.shape[d]! + v, 0)]!;
        break;
      }
      pos -= x.shape[axis]!;
    }
  }
  return { data, shape };
}

export function gatherRef(x: Arr, ids: readonly number[], idsShape: readonly number[], axis: number): Arr {
  const outer = size(x.shape.slice(0, axis));
  const inner = size(x.shape.slice(axis + 1));
  const len = x.shape[axis]!;
  const shape = [...x.shape.slice(0, axis), ...idsShape, ...x.shape.slice(axis + 1)];
  const data = new Float64Array(size(shape));
  for (let o = 0; o < outer; o++)
    ids.forEach((id, j) => {
      for (let i = 0; i < inner; i++) data[(o * ids.length + j) * inner + i] = x.data[(o * len + id) * inner + i]!;
    });
  return { data, shape };
}

export function segmentSumRef(x: Arr, ids: readonly number[], numSegments: number): Arr {
  const inner = size(x.shape) / ids.length;
  const shape = [numSegments, ...x.shape.slice(1)];
  const data = new Float64Array(numSegments * inner);
  ids.forEach((s, j) => {
    if (s < 0 || s >= numSegments) return;
    for (let i = 0; i < inner; i++) data[s * inner + i]! += x.data[j * inner + i]!;
  });
  return { data, shape };
}

export type ReduceOp = 'sum' | 'max' | 'min' | 'mean' | 'prod';

export function reduceRef(op: ReduceOp, x: Arr, axes: readonly number[], keepDims: boolean): Arr {
  const keepShape = x.shape.map((d, i) => (axes.includes(i) ? 1 : d));
  const n = size(keepShape);
  const init = op === 'max' ? -Infinity : op === 'min' ? Infinity : op === 'prod' ? 1 : 0;
  const data = new Float64Array(n).fill(init);
  for (let k = 0; k < x.data.length; k++) {
    const idx = unravel(k, x.shape);
    const o = idx.reduce((f, v, d) => f * keepShape[d]! + (axes.includes(d) ? 0 : v), 0);
    const v = x.data[k]!;
    data[o] =
      op === 'max'
        ? Math.max(data[o]!, v)
        : op === 'min'
          ? Math.min(data[o]!, v)
          : op === 'prod'
            ? data[o]! * v
            : data[o]! + v;
  }
  if (op === 'mean') {
    const cnt = size(x.shape) / n;
    for (let o = 0; o < n; o++) data[o]! /= cnt;
  }
  return { data, shape: keepDims ? keepShape : x.shape.filter((_, i) => !axes.includes(i)) };
}

export function softmaxRef(x: Arr): Arr {
  const cols = x.shape[x.shape.length - 1]!;
  const data = new Float64Array(x.data.length);
  for (let r = 0; r < x.data.length / cols; r++) {
    let m = -Infinity;
    for (let i = 0; i < cols; i++) m = Math.max(m, x.data[r * cols + i]!);
    let s = 0;
    for (let i = 0; i < cols; i++) s += Math.exp(x.data[r * cols + i]! - m);
    for (let i = 0; i < cols; i++) data[r * cols + i] = Math.exp(x.data[r * cols + i]! - m) / s;
  }
  return { data, shape: [...x.shape] };
}

/** max |got - want| / max(max |want|, 1e-30): the normwise relative error the parity tests bound. */
export function relErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  if (got.length !== want.length) return Infinity;
  let num = 0;
  let den = 0;
  for (let i = 0; i < got.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    if (Number.isNaN(g) !== Number.isNaN(w)) return Infinity;
    if (Number.isNaN(w) || g === w) continue;
    num = Math.max(num, Math.abs(g - w));
    den = Math.max(den, Math.abs(w));
  }
  for (let i = 0; i < want.length; i++) if (Number.isFinite(want[i]!)) den = Math.max(den, Math.abs(want[i]!));
  return num === 0 ? 0 : num / Math.max(den, 1e-30);
}
