import { describe, it, expect } from 'vitest';
import { bytesToUnicode, countWords, trainBpe } from './bpe-train.ts';
import { Rng } from '../random/rng.ts';

describe('bytesToUnicode', () => {
  it('matches GPT-2: printable bytes map to themselves, space to Ġ, newline to Ċ', () => {
    const m = bytesToUnicode();
    expect(new Set(m).size).toBe(256);
    expect(m[0x41]).toBe('A');
    expect(m[0x20]).toBe('Ġ'); // U+0120: the 33rd non-printable byte (0x00..0x20) -> 256 + 32
    expect(m[0x0a]).toBe('Ċ'); // U+010A = 256 + 10
    expect(m[0xad]).toBe('Ń'); // soft hyphen is remapped too: U+0143 = 256 + 67
  });
});

describe('countWords', () => {
  it('pre-tokenises like GPT-2 and cuts special tokens out', () => {
    const c = countWords(["it's a cat<|x|>a cat"], ['<|x|>']);
    // "it" "'s" " a" " cat" | "a" " cat"  (space becomes Ġ)
    expect(Object.fromEntries(c)).toEqual({ it: 1, "'s": 1, Ġa: 1, Ġcat: 2, a: 1 });
  });
});

describe('trainBpe', () => {
  it('learns the hand-computed merges of a tiny corpus', () => {
    // Words: abab, ab, abc. Pair counts: (a,b)=4, (b,a)=1, (b,c)=1 -> merge a+b first.
    // Then words are [ab ab], [ab], [ab c]: (ab,ab)=1 and (ab,c)=1 tie; the smaller right id ('c' = 99
    // < 'ab' = 256) wins -> ab+c, then ab+ab. Then no pairs are left, so training stops early.
    const { symbols, merges } = trainBpe(countWords(['abab', 'ab', 'abc'], []), 256 + 10);
    expect(merges).toEqual([
      ['a', 'b'],
      ['ab', 'c'],
      ['ab', 'ab'],
    ]);
    expect(symbols.slice(256)).toEqual(['ab', 'abc', 'abab']);
  });

  it('stops at the symbol budget and weighs words by frequency', () => {
    // "xy" x3 and "zw" x2: (x,y)=3 beats (z,w)=2; a budget of 257 symbols allows one merge.
    const { merges } = trainBpe(
      new Map([
        ['xy', 3],
        ['zw', 2],
      ]),
      257,
    );
    expect(merges).toEqual([['x', 'y']]);
  });

  it('keeps symbols distinct, within budget, and built from earlier symbols (random corpora)', () => {
    const rng = new Rng(7);
    for (let trial = 0; trial < 200; trial++) {
      const words = new Map<string, number>();
      for (let i = rng.int(1, 6); i > 0; i--) {
        let w = '';
        for (let j = rng.int(1, 8); j > 0; j--) w += rng.pick(['a', 'b', 'c', 'd']);
        words.set(w, rng.int(1, 5));
      }
      const budget = 256 + rng.int(0, 12);
      const { symbols, merges } = trainBpe(words, budget);
      expect(new Set(symbols).size).toBe(symbols.length);
      expect(symbols.length).toBeLessThanOrEqual(budget);
      merges.forEach(([l, r], k) => {
        const at = symbols.indexOf(l + r);
        expect(at).toBeGreaterThanOrEqual(256);
        expect(symbols.indexOf(l)).toBeLessThan(at);
        expect(symbols.indexOf(r)).toBeLessThan(at);
        expect(at).toBeLessThanOrEqual(256 + k);
      });
    }
  });
});
