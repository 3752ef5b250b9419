/**
 * Float dtypes of safetensors files: F32, F16 and BF16 on disk, float32 in
 * memory (tfjs trains in float32 only). Pure conversions over little-endian byte buffers.
 */

export type DiskDtype = 'F32' | 'F16' | 'BF16';

// Typed-array views read the host's byte order; the fast paths below need it to be little-endian.
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Bytes per element of each supported on-disk dtype. */
export const DTYPE_BYTES: Readonly<Record<DiskDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

export function isDiskDtype(s: unknown): s is DiskDtype {
  return s === 'F32' || s === 'F16' || s === 'BF16';
}

/** Converts one IEEE 754 binary16 bit pattern to a float (subnormals, infinities and NaN included). */
export function halfBitsToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // subnormal: frac * 2^-10 * 2^-14
  if (exp === 0x1f) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

// 65,536-entry lookup table (256 KiB): decoding F16 checkpoints is then one load per element.
let halfTable: Float32Array | undefined;
function halfLut(): Float32Array {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfTable[h] = halfBitsToFloat(h);
  }
  return halfTable;
}

/**
 * Decodes `count` little-endian elements of `dtype` from `src` (starting at byte 0) into
 * `dst[dstOffset ..]`. `src` must hold count * DTYPE_BYTES[dtype] bytes.
 */
export function decodeInto(
  dtype: DiskDtype,
  src: Uint8Array,
  dst: Float32Array,
  dstOffset: number,
  count: number,
): void {
  if (HOST_LE && dtype !== 'F32' && src.byteOffset % 2 === 0) {
    // Fast path (3-5x): typed-array views instead of per-element DataView calls.
    const h = new Uint16Array(src.buffer, src.byteOffset, count);
    if (dtype === 'F16') {
      const lut = halfLut();
      for (let i = 0; i < count; i++) dst[dstOffset + i] = lut[h[i]];
    } else {
      const out = new Uint32Array(dst.buffer, dst.byteOffset + 4 * dstOffset, count);
      for (let i = 0; i < count; i++) out[i] = h[i] << 16;
    }
    return;
  }
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  if (dtype === 'F32') {
    for (let i = 0; i < count; i++) dst[dstOffset + i] = view.getFloat32(4 * i, true);
  } else if (dtype === 'F16') {
    const lut = halfLut();
    for (let i = 0; i < count; i++) dst[dstOffset + i] = lut[view.getUint16(2 * i, true)];
  } else {
    // BF16 is the upper half of a float32: shift its 16 bits into place.
    const u32 = new Uint32Array(1);
    const f32 = new Float32Array(u32.buffer);
    for (let i = 0; i < count; i++) {
      u32[0] = view.getUint16(2 * i, true) << 16;
      dst[dstOffset + i] = f32[0];
    }
  }
}

/**
 * Rounds float32 bit patterns to bfloat16 with round-to-nearest-even, as PyTorch's
 * `tensor.to(torch.bfloat16)` does; NaN stays a (quiet) NaN, overflow past bf16's max goes to Inf.
 */
export function f32BitsToBf16(bits: number): number {
  const u = bits >>> 0;
  // NaN: keep sign, force quiet bit
  if ((u & 0x7f800000) === 0x7f800000 && (u & 0x007fffff) !== 0) return ((u >>> 16) | 0x0040) & 0xffff;
  const lsb = (u >>> 16) & 1;
  return ((u + 0x7fff + lsb) >>> 16) & 0xffff;
}

/** Encodes `src[srcOffset .. srcOffset+count)` as little-endian `dtype` ('F32' or 'BF16') into `dst` from byte 0. */
export function encodeInto(
  dtype: 'F32' | 'BF16',
  src: Float32Array,
  srcOffset: number,
  count: number,
  dst: Uint8Array,
): void {
  const view = new DataView(dst.buffer, dst.byteOffset, dst.byteLength);
  if (dtype === 'F32') {
    for (let i = 0; i < count; i++) view.setFloat32(4 * i, src[srcOffset + i], true);
    return;
  }
  const u32 = new Uint32Array(src.buffer, src.byteOffset, src.length);
  if (HOST_LE && dst.byteOffset % 2 === 0) {
    const h = new Uint16Array(dst.buffer, dst.byteOffset, count);
    for (let i = 0; i < count; i++) h[i] = f32BitsToBf16(u32[srcOffset + i]);
    return;
  }
  for (let i = 0; i < count; i++) view.setUint16(2 * i, f32BitsToBf16(u32[srcOffset + i]), true);
}
