import { describe, expect, it } from 'vitest';
import { Rng } from '../../random/rng.ts';
import { NameForge } from './names.ts';

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
