import { describe, expect, it } from 'vitest';
import { median } from './median.ts';

describe('median', () => {
  it('is the middle sample, or the mean of the two middle ones, whatever the order', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    const xs = [5, 1, 4];
    median(xs);
    expect(xs).toEqual([5, 1, 4]);
  });
});
