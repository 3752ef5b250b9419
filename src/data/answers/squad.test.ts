import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Rng } from '../../random/rng.ts';
import { normalizeAnswer, exactMatch, f1Score, maxOverGroundTruths, coverExactMatch } from './squad.ts';
import { hasPython } from '../../../test/reference/has-python.ts';

describe('normalizeAnswer (SQuAD normalisation)', () => {
  it('lowercases, drops ASCII punctuation and articles, collapses whitespace', () => {
    expect(normalizeAnswer('The  Eiffel-Tower!')).toBe('eiffeltower');
    expect(normalizeAnswer('An apple, a day')).toBe('apple day');
    // Articles are removed after punctuation, so "the-end" -> "theend" keeps its "the".
    expect(normalizeAnswer('the-end')).toBe('theend');
    expect(normalizeAnswer("a.k.a. 'Thea'")).toBe('aka thea');
  });
  it('uses Unicode word boundaries as Python re does', () => {
    // Python normalize_answer('éthe the_ a1 an thé') == 'éthe a1 thé' ("_" goes before the articles)
    expect(normalizeAnswer('éthe the_ a1 an thé')).toBe('éthe a1 thé');
    expect(normalizeAnswer('The Café – the')).toBe('café –'); // en dash is not ASCII punctuation
  });
  it('empty and whitespace-only strings normalise to ""', () => {
    expect(normalizeAnswer('')).toBe('');
    expect(normalizeAnswer(' the . ')).toBe('');
  });
});

describe('exactMatch / f1Score', () => {
  it('EM after normalisation', () => {
    expect(exactMatch('The Beatles.', 'beatles')).toBe(1);
    expect(exactMatch('Beatles band', 'beatles')).toBe(0);
  });
  it('bag-of-tokens F1 (hand-computed)', () => {
    // pred [new, york, city], gold [new, york]: same 2, P = 2/3, R = 1, F1 = 2*(2/3)/(5/3) = 0.8
    expect(f1Score('New York City', 'new york')).toBeCloseTo(0.8, 12);
    // repeated tokens count once each side: pred [a1, a1, b], gold [a1, c]: same 1, P 1/3, R 1/2, F1 0.4
    expect(f1Score('a1 a1 b', 'a1 c')).toBeCloseTo(0.4, 12);
    expect(f1Score('x', 'y')).toBe(0);
  });
  it('empty token lists: 1 only when both are empty', () => {
    expect(f1Score('', '')).toBe(1);
    expect(f1Score('the', 'a')).toBe(1); // both normalise to no tokens
    expect(f1Score('', 'Paris')).toBe(0);
    expect(f1Score('Paris', '...')).toBe(0);
  });
  it('max over answer and aliases', () => {
    expect(maxOverGroundTruths(exactMatch, 'Stanley Hall', ['G. Stanley Hall', 'Stanley Hall'])).toBe(1);
    // best alias by F1: "g stanley hall" vs pred [stanley]: P 1, R 1/3 -> 0.5; "stanley hall": P 1, R 1/2 -> 2/3
    expect(maxOverGroundTruths(f1Score, 'Stanley', ['G. Stanley Hall', 'Stanley Hall'])).toBeCloseTo(2 / 3, 12);
    expect(() => maxOverGroundTruths(exactMatch, 'x', [])).toThrow(/no gold answers/);
  });
});

describe('coverExactMatch', () => {
  it('gold inside the prediction on token boundaries', () => {
    expect(coverExactMatch('I think it is the Kansas Song.', ['Kansas song'])).toBe(1);
    expect(coverExactMatch('10 apples', ['1'])).toBe(0);
    expect(coverExactMatch('anything', ['the'])).toBe(0); // empty normalised gold covers nothing
    expect(coverExactMatch('Jane Ballou', ['Ballou, Jane', 'Jane Ballou'])).toBe(1);
  });
});

describe('parity with Python on random Unicode strings', () => {
  it.skipIf(!hasPython())('normalizeAnswer and f1Score equal the Python reference', () => {
    // Articles, punctuation, Unicode letters / digits / marks / spaces that JS and Python treat differently.
    const pool = [
      'a',
      'an',
      'the',
      'The',
      'A',
      ' ',
      '  ',
      '\t',
      '\n',
      '\x1c',
      '\x85',
      '\u00a0',
      '\u2003',
      '\ufeff',
      '.',
      ',',
      "'",
      '-',
      '_',
      '!',
      '"',
      '\u2013',
      '\u2019',
      'é',
      'É',
      'ß',
      'İ',
      'Σ',
      'ς',
      '\u0301',
      '²',
      '½',
      '\u0661',
      'x',
      'Paris',
      '1',
      'théâtre',
      'ǅ',
      'ﬁ',
    ];
    const rng = new Rng(11);
    const strings = Array.from({ length: 400 }, () =>
      Array.from({ length: rng.int(0, 8) }, () => pool[rng.int(0, pool.length - 1)]).join(rng.int(0, 1) ? ' ' : ''),
    );
    const ref = resolve(import.meta.dirname, '../../../test/reference/musique_reference.py');
    const code =
      `import json,sys,importlib.util\nspec=importlib.util.spec_from_file_location('r', ` +
      `${JSON.stringify(ref)})\nr=importlib.util.module_from_spec(spec); ` +
      `spec.loader.exec_module(r)\nxs=json.loads(sys.stdin.read())\nprint(json.dumps([[r.norm(x), r.f1(x, ` +
      `xs[(i+1)%len(xs)])] for i,x in enumerate(xs)]))`;
    const py = JSON.parse(
      execFileSync('python3', ['-c', code], { input: JSON.stringify(strings) }).toString(),
    ) as Array<[string, number]>;
    strings.forEach((s, i) => {
      expect(normalizeAnswer(s), JSON.stringify(s)).toBe(py[i][0]);
      expect(f1Score(s, strings[(i + 1) % strings.length])).toBe(py[i][1]);
    });
  });
});
