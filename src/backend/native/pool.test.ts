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
    expect(pool.stats).toEqual({ hits: 1, misses: 3, evicted: 0 });
  });

  it('when full, leaves the buffers of the class used longest ago to V8, not the newcomer', () => {
    const pool = new ArrayPool(16_384, 64, 16_384);
    const olds = [pool.take(4096), pool.take(4096), pool.take(4096)]; // one class, 12 KiB
    const fresh = pool.take(8192); // another class, used last
    for (const b of olds) pool.give(b);
    expect(pool.heldBytes).toBe(12_288);
    pool.give(fresh); // 20 KiB would not fit in 16: one of the older class goes
    expect(pool.heldBytes).toBe(2 * 4096 + 8192);
    expect(pool.stats.evicted).toBe(1);
    expect(pool.take(8192)).toBe(fresh);
    expect(olds).toContain(pool.take(4096));
    expect(olds).toContain(pool.take(4096));
    expect(pool.heldBytes).toBe(0);
  });
});
