import { describe, expect, it } from 'vitest';
import { branchPrefixes, commonPrefixLength, findSharedPrefixes } from './prefix.ts';

const range = (a: number, n: number): number[] => Array.from({ length: n }, (_, i) => a + i);

describe('findSharedPrefixes', () => {
  it('groups prompts by their shared prefix, leaves loners out, keeps request order inside a group', () => {
    const ctx = range(100, 20); // a 20-token shared context
    const prompts = [
      [...ctx, 1, 2], // 0: group A
      range(500, 30), // 1: alone
      [...ctx, 3], // 2: group A
      [...range(200, 18), 7], // 3: group B
      [...range(200, 18), 8, 9, 10], // 4: group B
      [...ctx, 1, 5, 6], // 5: group A (shares 21 with 0, but the group's common prefix is 20)
    ];
    expect(findSharedPrefixes(prompts, 16)).toEqual([
      { members: [0, 2, 5], length: 20 },
      { members: [3, 4], length: 18 },
    ]);
    // Raising the threshold past 18 drops group B; at 21 only 0 and 5 (ctx ++ [1]) remain; past that nothing.
    expect(findSharedPrefixes(prompts, 19)).toEqual([{ members: [0, 2, 5], length: 20 }]);
    expect(findSharedPrefixes(prompts, 21)).toEqual([{ members: [0, 5], length: 21 }]);
    expect(findSharedPrefixes(prompts, 22)).toEqual([]);
    expect(findSharedPrefixes(prompts, 0)).toEqual([]);
  });

  it('caps the shared length so every member keeps its last token for the suffix pass', () => {
    const p = range(1, 20);
    // Identical prompts of 20 tokens share 19; one being a prefix of the other shares its length - 1.
    expect(findSharedPrefixes([p, p], 16)).toEqual([{ members: [0, 1], length: 19 }]);
    expect(findSharedPrefixes([[...p, 50], p], 16)).toEqual([{ members: [0, 1], length: 19 }]);
    // 17 identical tokens with threshold 17: the cap (16) falls below it, so no group.
    expect(findSharedPrefixes([range(1, 17), range(1, 17)], 17)).toEqual([]);
  });

  it('rejects a bad threshold in one line', () => {
    expect(() => findSharedPrefixes([[1], [1]], -1)).toThrow('prefixMinTokens must be a non-negative integer (got -1)');
    expect(() => findSharedPrefixes([[1], [1]], 1.5)).toThrow(
      'prefixMinTokens must be a non-negative integer (got 1.5)',
    );
  });

  it('commonPrefixLength', () => {
    expect(commonPrefixLength([1, 2, 3], [1, 2, 4])).toBe(2);
    expect(commonPrefixLength([1, 2], [1, 2, 3])).toBe(2);
    expect(commonPrefixLength([], [1])).toBe(0);
  });
});

describe('branchPrefixes', () => {
  const ctx = Array.from({ length: 20 }, (_, i) => i + 1);
  it("gives each branch point once, drops one that prefixes another, stops before each prompt's last token", () => {
    // Neighbours: (ctx 5 6 7, ctx 5 6 8) part after ctx 5 6; (ctx 5 6 8, ctx 9) after ctx; the duplicate ctx 9 pair
    // shares all but its last token, ctx; [50, 51] shares nothing. ctx prefixes ctx 5 6: only ctx 5 6 remains.
    const prompts = [
      [...ctx, 9],
      [50, 51],
      [...ctx, 5, 6, 8],
      [...ctx, 9],
      [...ctx, 5, 6, 7],
    ];
    expect(branchPrefixes(prompts, 16)).toEqual([[...ctx, 5, 6]]);
    expect(branchPrefixes(prompts, 0)).toEqual([]);
    expect(branchPrefixes(prompts, 23)).toEqual([]);
  });
  it('branches that do not prefix each other are all kept', () => {
    expect(
      branchPrefixes(
        [
          [...ctx, 1, 2],
          [...ctx, 1, 3],
          [...ctx, 7, 8],
          [...ctx, 7, 9],
        ],
        16,
      ),
    ).toEqual([
      [...ctx, 1],
      [...ctx, 7],
    ]);
  });
});
