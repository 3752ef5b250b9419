import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  readHotpot,
  readTwoWiki,
  goldSupportingFacts,
  goldEvidences,
  supportingFactsFromIdx,
  joinSentences,
} from './hotpot.ts';

const repo = resolve(import.meta.dirname, '../../..');
const shared = join(repo, '../shared/data/hotpotqa/hotpot_dev_distractor_500.jsonl');

describe('readHotpot', () => {
  it('shipped JSON-array sample: paragraphs with idx, support flags by title, sentence counts', () => {
    const eps = readHotpot(join(repo, 'data/hotpotqa/hotpot_dev_distractor_sample.json'));
    expect(eps).toHaveLength(6);
    const e = eps[0];
    expect(e.answers).toEqual(['Thornwick']);
    expect(e.paragraphs.map((p) => p.idx)).toEqual([...Array(10).keys()]);
    expect(e.paragraphs[1].text).toBe(
      'Brightwater Looms is a Velorian textile company. It was founded in 1931 by Ilsa Marrow in Thornwick. Its ' +
        'mills stand on the River Lume.',
    );
    expect(e.paragraphs.filter((p) => p.isSupporting).map((p) => p.idx)).toEqual([1, 3]);
    expect(goldSupportingFacts(e)).toEqual([
      ['Brightwater Looms', 1],
      ['Ilsa Marrow', 1],
    ]);
    // citing paragraphs 1 and 3 stands for all their sentences (3 + 3)
    expect(supportingFactsFromIdx(e, [3, 1, 3, 99])).toEqual([
      ['Ilsa Marrow', 0],
      ['Ilsa Marrow', 1],
      ['Ilsa Marrow', 2],
      ['Brightwater Looms', 0],
      ['Brightwater Looms', 1],
      ['Brightwater Looms', 2],
    ]);
    expect(eps.map((x) => x.meta?.type)).toEqual(['bridge', 'comparison', 'comparison', 'bridge', 'bridge', 'bridge']);
  });
  it.skipIf(!existsSync(shared))(
    'real HotpotQA dev-distractor JSONL sample: 500 records, nearly all with 10 paragraphs',
    () => {
      const eps = readHotpot(shared);
      expect(eps).toHaveLength(500);
      expect(eps[0].id).toBe('5a7166395542994082a3e814');
      expect(eps[0].answers).toEqual(['Kansas Song']);
      // the real dev set has a few short contexts (495 x 10, 2 x 4, 1 x 2, 2 x 0 paragraphs)
      expect(eps.filter((e) => e.paragraphs.length === 10)).toHaveLength(495);
      expect(eps.filter((e) => e.answers[0] === 'yes' || e.answers[0] === 'no')).toHaveLength(45);
    },
  );
  it('sentences join with the spaces they carry, adding one only where missing', () => {
    expect(joinSentences(['A b.', ' C d.'])).toBe('A b. C d.');
    expect(joinSentences(['A b.', 'C d.'])).toBe('A b. C d.');
  });
  it('a bad record names file, line and field', () => {
    const p = join(mkdtempSync(join(tmpdir(), 'sharp-hotpot-')), 'bad.json');
    writeFileSync(
      p,
      '[\n {"_id": "a", "question": "q", "context": []},\n {"_id": "b", "question": "q", "context": [["T", "not a ' +
        'list"]]}\n]\n',
    );
    expect(() => readHotpot(p)).toThrow(`${p}:3: context[0][1]: Invalid input: expected array, received string`);
  });
});

describe('readTwoWiki', () => {
  it('shipped sample: evidences kept, sentences without leading spaces joined', () => {
    const eps = readTwoWiki(join(repo, 'data/2wiki/2wiki_dev_sample.json'));
    expect(eps).toHaveLength(5);
    expect(new Set(eps.map((e) => e.meta?.type))).toEqual(
      new Set(['comparison', 'compositional', 'bridge_comparison', 'inference']),
    );
    expect(goldEvidences(eps[1])).toEqual([
      ['Cold Looms', 'author', 'Ilsa Marrow'],
      ['Ilsa Marrow', 'place of birth', 'Thornwick'],
    ]);
    expect(eps[1].paragraphs.find((p) => p.title === 'Ilsa Marrow')?.text).toBe(
      'Ilsa Marrow (5 March 1902 - 9 June 1977) was a Velorian weaver and industrialist. She was born in Thornwick.',
    );
  });
});
