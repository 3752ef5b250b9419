import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { testBackend } from '../../../test/backend.ts';
import { dropout, dropoutMask, hash32 } from './dropout.ts';

beforeAll(async () => {
  await initBackend(testBackend());
});

describe('dropout', () => {
  it('hash32 is lowbias32 (values from its reference C implementation)', () => {
    // uint32_t h = x; h ^= h >> 16; h *= 0x7feb352d; h ^= h >> 15; h *= 0x846ca68b; h ^= h >> 16;
    expect(hash32(0)).toBe(0);
    expect(hash32(1)).toBe(hashRef(1));
    expect(hash32(0xdeadbeef)).toBe(hashRef(0xdeadbeef));
  });

  it('keeps a fraction 1 - rate, scaled by 1 / (1 - rate); the same mask for a seed, another for another seed', () => {
    for (const rate of [0.05, 0.5]) {
      const m = dropoutMask(200_000, rate, 7);
      const scaled = Math.fround(1 / (1 - rate));
      let kept = 0;
      let other = 0;
      for (const v of m) {
        if (v === scaled) kept++;
        else if (v !== 0) other++;
      }
      expect(other).toBe(0); // every value is 0 or 1 / (1 - rate)
      // Binomial: sd sqrt(n p (1 - p)) <= 224 of 200,000; 5 sd.
      expect(Math.abs(kept / 200_000 - (1 - rate))).toBeLessThan((5 * 224) / 200_000);
      expect(dropoutMask(200_000, rate, 7)).toEqual(m);
      const next = dropoutMask(200_000, rate, 8);
      let same = 0;
      for (let i = 0; i < m.length; i++) same += (m[i] === 0) === (next[i] === 0) ? 1 : 0;
      // independent masks agree at p^2 + (1-p)^2
      expect(same).toBeLessThan(200_000 * (1 - 2 * rate * (1 - rate)) + 2000);
    }
    // Neighbouring elements and seeds are not correlated: runs of drops are as short as chance makes them.
    const m = dropoutMask(100_000, 0.5, 1);
    let pairs = 0;
    for (let i = 1; i < m.length; i++) pairs += m[i] === 0 && m[i - 1] === 0 ? 1 : 0;
    expect(Math.abs(pairs / 100_000 - 0.25)).toBeLessThan(0.01);
  });

  it('multiplies by the mask, with the mask as the gradient; rate 0 is the identity', () => {
    const x = tf.tensor2d(
      Array.from({ length: 64 }, (_, i) => i + 1),
      [8, 8],
    ); // [8, 8]
    const mask = dropoutMask(64, 0.25, 3);
    const y = dropout(x, 0.25, 3);
    expect(Array.from(y.dataSync())).toEqual(Array.from(mask, (m, i) => Math.fround(m * (i + 1))));
    const g = tf.grad((t: tf.Tensor) => tf.sum(dropout(t, 0.25, 3)))(x);
    expect(Array.from(g.dataSync())).toEqual(Array.from(mask));
    expect(dropout(x, 0, 3)).toBe(x);
    expect(() => dropoutMask(4, 1, 0)).toThrow('rate must be in [0, 1)');
    tf.dispose([x, y, g]);
  });
});

/** lowbias32 with BigInt arithmetic (no Math.imul), as the C reference computes it. */
function hashRef(x: number): number {
  const M = 0xffffffffn;
  let h = BigInt(x >>> 0);
  h ^= h >> 16n;
  h = (h * 0x7feb352dn) & M;
  h ^= h >> 15n;
  h = (h * 0x846ca68bn) & M;
  h ^= h >> 16n;
  return Number(h);
}
