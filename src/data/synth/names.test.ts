import { describe, expect, it } from 'vitest';
import { Rng } from '../../random/rng.ts';
import { MAX_NAME_POOL } from '../../config/sections/data.ts';
import { NameForge, namePool } from './names.ts';
import { createWorld } from './world.ts';

describe('NameForge', () => {
  it('never hands out a word twice and marks every word as non-English', () => {
    const forge = new NameForge(new Rng(3));
    const words: string[] = [];
    for (let i = 0; i < 300; i++) {
      const p = forge.person();
      words.push(p.first, p.last, forge.place());
    }
    words.push(forge.language());
    expect(new Set(words.map((w) => w.toLowerCase())).size).toBe(words.length);
    for (const w of words) {
      expect(w).toMatch(/^[A-Z][a-z]{3,}$/);
      expect(w.toLowerCase()).toMatch(/zh|vl|rv|lk|x/);
    }
  });

  it('is deterministic per seed', () => {
    const a = new NameForge(new Rng(11));
    const b = new NameForge(new Rng(11));
    const c = new NameForge(new Rng(12));
    const draw = (f: NameForge) => [f.place(), f.person().last, f.language()];
    const da = draw(a);
    expect(draw(b)).toEqual(da);
    expect(draw(c)).not.toEqual(da);
  });
});

describe('namePool at the bound of data.synthetic.namePool', () => {
  it('builds MAX_NAME_POOL distinct words: the syllable space runs out only past 104,120', () => {
    const pool = namePool(MAX_NAME_POOL);
    expect(pool).toHaveLength(MAX_NAME_POOL);
    expect(new Set(pool.map((w) => w.toLowerCase())).size).toBe(MAX_NAME_POOL);
    expect(() => namePool(104_121)).toThrow(/could not find an unused 2-syllable word/);
  }, 60_000);

  it("a held-out world needs the pool's reserve beyond its own words", () => {
    const small = { countries: 3, cities: 6, people: 14, companies: 6 }; // 46 words
    const fails = (pool: number): number => {
      let n = 0;
      for (let seed = 0; seed < 100; seed++) {
        try {
          createWorld(seed, small, { names: 'held-out', pool });
        } catch {
          n++;
        }
      }
      return n;
    };
    // Exactly the world's words: most held-out worlds find no family name in the held-out part of the space.
    expect(fails(46)).toBeGreaterThan(50);
    // The smallest pool the config accepts for this world (46 + 256).
    expect(fails(302)).toBe(0);
  });
});
