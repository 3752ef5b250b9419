import { describe, it, expect } from 'vitest';
import { Rng } from '../../random/rng.ts';
import { EpochOrder } from './epoch-order.ts';

describe('EpochOrder', () => {
  it('walks seeded permutations, one per epoch, as a shuffle-then-walk loop does', () => {
    const o = new EpochOrder(3, 7);
    const rng = new Rng(7);
    const e1 = rng.shuffle([0, 1, 2]);
    const e2 = rng.shuffle([0, 1, 2]);
    expect(o.take(2)).toEqual(e1.slice(0, 2));
    expect(o.take(2)).toEqual([e1[2], e2[0]]); // a batch spanning the epoch boundary
    expect(o.cursor).toBe(4);
    expect(o.rngState()).toEqual(rng.state());
  });

  it('restarted at a cursor continues exactly where the uninterrupted order is', () => {
    const straight = new EpochOrder(5, 3);
    const all = straight.take(17);
    for (const cut of [0, 1, 5, 6, 11]) {
      const resumed = new EpochOrder(5, 3, cut);
      expect(resumed.cursor).toBe(cut);
      expect(resumed.take(17 - cut)).toEqual(all.slice(cut));
      expect(resumed.rngState()).toEqual(straight.rngState());
    }
  });

  it('refuses an empty item set', () => {
    expect(() => new EpochOrder(0, 1)).toThrow('EpochOrder: n must be an integer >= 1, got 0');
  });
});
