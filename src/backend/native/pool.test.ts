import { describe, expect, it } from 'vitest';
import { ArrayPool, sizeClass } from './pool.ts';

describe('ArrayPool', () => {
  it('size classes: at least the bytes asked, at most 12.5 % more, eight per power of two', () => {
    for (const b of [65, 100, 4096, 4097, 5000, 123_456, 189_000_000]) {
      const c = sizeClass(b);
      expect(c).toBeGreaterThanOrEqual(b);
      expect(c).toBeLessThanOrEqual(b * 1.125);
    }
    expect(new Set([4097, 4200, 4608].map(sizeClass)).size).toBe(1);
  });

  it('hands a returned buffer out again, never a pinned or foreign one, and stops at its cap', () => {
    const pool = new ArrayPool(16_384, 64, 32_768);
    const a = pool.take(5000);
    expect(a.byteLength).toBe(sizeClass(5000));
    pool.give(a);
    expect(pool.heldBytes).toBe(a.byteLength);
    expect(pool.take(4900)).toBe(a); // same class
    const b = pool.take(5000);
    pool.pin(b);
    pool.give(b);
    expect(pool.heldBytes).toBe(0);
    pool.give(new ArrayBuffer(5120));
    expect(pool.heldBytes).toBe(0);
    const big = pool.take(20_000);
    pool.give(big); // above the cap: left to V8
    expect(pool.heldBytes).toBe(0);
    expect(pool.take(10).byteLength).toBe(10); // small: not pooled
    expect(pool.take(40_000).byteLength).toBe(40_000); // above the largest pooled: not pooled
    expect(pool.stats).toEqual({ hits: 1, misses: 3 });
  });
});
