import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readWebWalker } from './webwalker.ts';

const repo = resolve(import.meta.dirname, '../../..');

describe('readWebWalker', () => {
  it('shipped sample: keys in any case, info fields kept for breakdowns', () => {
    const eps = readWebWalker(join(repo, 'data/webwalkerqa/webwalkerqa_sample.jsonl'));
    expect(eps).toHaveLength(5);
    expect(eps.map((e) => e.meta?.difficulty)).toEqual(['easy', 'hard', 'medium', 'easy', 'medium']);
    expect(eps[2]).toMatchObject({
      id: 'webwalker-2',
      answers: ['12 crowns'],
      meta: { rootUrl: 'https://tolland-poetry.example/', type: 'single_source', lang: 'en' },
    });
    expect(eps[1].meta?.goldenPath).toEqual(['root->geography->rivers', 'root->provinces']);
    expect(eps[4].meta?.lang).toBe('zh');
  });
  it('a missing question names file, line and field', () => {
    const p = join(mkdtempSync(join(tmpdir(), 'sharp-ww-')), 'bad.jsonl');
    writeFileSync(p, '{"Question":"q","Answer":"a"}\n{"Answer":"a"}\n');
    expect(() => readWebWalker(p)).toThrow(`${p}:2: question: Invalid input: expected string, received undefined`);
  });
});
