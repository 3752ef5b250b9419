import { describe, expect, it } from 'vitest';
import { Rng } from './rng.ts';

describe('Rng', () => {
  it('is deterministic per seed and differs across seeds', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const xs = Array.from({ length: 5 }, () => a.float());
    expect(Array.from({ length: 5 }, () => b.float())).toEqual(xs);
    expect(Array.from({ length: 5 }, () => c.float())).not.toEqual(xs);
  });

  it('restores from a saved state and continues the same stream', () => {
    const a = new Rng(7);
    a.float();
    const saved = a.state();
    const next = [a.int(0, 100), a.float()];
    const b = Rng.fromState(saved);
    expect([b.int(0, 100), b.float()]).toEqual(next);
  });

  it('keeps floats in [0, 1) with a mean near 0.5 and ints inside bounds', () => {
    const r = new Rng(1);
    let sum = 0;
    for (let i = 0; i < 10_000; i++) {
      const x = r.float();
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
      sum += x;
      const k = r.int(-3, 3);
      expect(k).toBeGreaterThanOrEqual(-3);
      expect(k).toBeLessThanOrEqual(3);
    }
    expect(Math.abs(sum / 10_000 - 0.5)).toBeLessThan(0.02);
  });

  it('shuffle is a permutation', () => {
    const r = new Rng(3);
    expect(r.shuffle([1, 2, 3, 4, 5]).sort()).toEqual([1, 2, 3, 4, 5]);
  });
});
