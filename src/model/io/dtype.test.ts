import { describe, it, expect } from 'vitest';
import { decodeInto, encodeInto, f32BitsToBf16, halfBitsToFloat } from './dtype.ts';

function f32Bits(x: number): number {
  return new Uint32Array(new Float32Array([x]).buffer)[0];
}

describe('halfBitsToFloat', () => {
  it('decodes hand-picked binary16 patterns', () => {
    expect(halfBitsToFloat(0x3c00)).toBe(1); // exp 15 -> 2^0
    expect(halfBitsToFloat(0xc000)).toBe(-2); // sign, exp 16
    expect(halfBitsToFloat(0x7bff)).toBe(65504); // largest finite half: (2 - 2^-10) * 2^15
    expect(halfBitsToFloat(0x0001)).toBe(2 ** -24); // smallest subnormal
    expect(halfBitsToFloat(0x0400)).toBe(2 ** -14); // smallest normal
    expect(halfBitsToFloat(0x3555)).toBeCloseTo(0.333251953125, 12); // 1.0101010101b * 2^-2
    expect(halfBitsToFloat(0x7c00)).toBe(Infinity);
    expect(halfBitsToFloat(0xfc00)).toBe(-Infinity);
    expect(Number.isNaN(halfBitsToFloat(0x7e00))).toBe(true);
    expect(Object.is(halfBitsToFloat(0x8000), -0)).toBe(true);
  });
});

describe('f32BitsToBf16 (round to nearest even)', () => {
  it('rounds hand-computed cases', () => {
    expect(f32BitsToBf16(f32Bits(1))).toBe(0x3f80);
    // 1 + 2^-8 is exactly halfway between bf16 1.0 (0x3f80) and 1 + 2^-7 (0x3f81): ties to even 0x3f80.
    expect(f32BitsToBf16(f32Bits(1 + 2 ** -8))).toBe(0x3f80);
    // 1 + 3 * 2^-8 is halfway between 0x3f81 and 0x3f82: ties to even 0x3f82.
    expect(f32BitsToBf16(f32Bits(1 + 3 * 2 ** -8))).toBe(0x3f82);
    // Just above the halfway point rounds up.
    expect(f32BitsToBf16(f32Bits(1 + 2 ** -8 + 2 ** -20))).toBe(0x3f81);
    expect(f32BitsToBf16(f32Bits(-2.5))).toBe(0xc020);
    // float32 max (0x7f7fffff) rounds past bf16's max to +Inf, as PyTorch does.
    expect(f32BitsToBf16(0x7f7fffff)).toBe(0x7f80);
    expect(f32BitsToBf16(f32Bits(-Infinity))).toBe(0xff80);
    // A NaN whose payload sits only in the low 16 bits must stay NaN, not become Inf.
    const nan = f32BitsToBf16(0x7f800001);
    expect(nan & 0x7f80).toBe(0x7f80);
    expect(nan & 0x7f).not.toBe(0);
  });
});

describe('decodeInto / encodeInto', () => {
  it('round-trips float32 exactly and bf16 through its rounding', () => {
    const src = new Float32Array([1, -0, 3.140625, 1e-40, 65504, -7.25]);
    const f32 = new Uint8Array(src.length * 4);
    encodeInto('F32', src, 0, src.length, f32);
    const back = new Float32Array(src.length);
    decodeInto('F32', f32, back, 0, src.length);
    expect(new Uint32Array(back.buffer)).toEqual(new Uint32Array(src.buffer));

    const bf = new Uint8Array(src.length * 2);
    encodeInto('BF16', src, 0, src.length, bf);
    expect([bf[0], bf[1]]).toEqual([0x80, 0x3f]); // 1.0 little-endian
    const bfBack = new Float32Array(src.length);
    decodeInto('BF16', bf, bfBack, 0, src.length);
    // 1, -0, 3.140625 (= 0x4049 exactly), -7.25 are exact in bf16; 65504 rounds to 65536 (8 mantissa bits).
    expect(bfBack[0]).toBe(1);
    expect(Object.is(bfBack[1], -0)).toBe(true);
    expect(bfBack[2]).toBe(3.140625);
    expect(bfBack[4]).toBe(65536);
    expect(bfBack[5]).toBe(-7.25);
  });

  it('gives the same values on the unaligned (DataView) path as on the typed-array path', () => {
    const src = new Float32Array([1, -2.5, 3.140625, 1e-3, -65504]);
    const padded = new Uint8Array(1 + src.length * 2);
    const unaligned = padded.subarray(1); // odd byteOffset: no Uint16Array view possible
    encodeInto('BF16', src, 0, src.length, unaligned);
    const aligned = new Uint8Array(src.length * 2);
    encodeInto('BF16', src, 0, src.length, aligned);
    expect(Array.from(unaligned)).toEqual(Array.from(aligned));
    for (const dtype of ['BF16', 'F16'] as const) {
      const a = new Float32Array(src.length);
      const b = new Float32Array(src.length);
      decodeInto(dtype, aligned, a, 0, src.length);
      decodeInto(dtype, unaligned, b, 0, src.length);
      expect(Array.from(b)).toEqual(Array.from(a));
    }
  });

  it('decodes F16 with an offset into the destination', () => {
    const bytes = new Uint8Array([0x00, 0x3c, 0x00, 0xc0]); // [1, -2] little-endian
    const dst = new Float32Array(4);
    decodeInto('F16', bytes, dst, 2, 2);
    expect(Array.from(dst)).toEqual([0, 0, 1, -2]);
  });
});
