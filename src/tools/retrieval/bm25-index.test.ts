import { cpSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, TINY, writeCorpus } from '../../../test/retrieval/corpora.ts';
import { Bm25Index, readManifest, requireManifest } from './bm25-index.ts';
import { buildIndex } from './build-index.ts';
import { SearchStopped } from './retriever.ts';

describe('Bm25Index scores (FTS5 bm25(), negated)', () => {
  let index: Bm25Index;
  beforeAll(async () => {
    const dir = tempDir();
    await buildIndex({ corpus: writeCorpus(dir, TINY), out: join(dir, 'index') });
    index = new Bm25Index(join(dir, 'index'));
  });
  afterAll(() => index.close());

  // BM25 with k1 = 1.2, b = 0.75, N = 6, avgdl = 20/6 (title and text tokens of each passage),
  // idf(n) = ln((N - n + 0.5) / (n + 0.5)), score = sum idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * D / avgdl)).
  it('matches hand-computed BM25 for one term', () => {
    // cat: n = 2, idf = ln(4.5 / 2.5) = 0.587787.
    // Delta (tf 4, D 6): K = 1.2 * (0.25 + 0.75 * 1.8) = 1.92; 0.587787 * 8.8 / 5.92 = 0.873737.
    // Alpha (tf 1, D 3): K = 1.2 * (0.25 + 0.75 * 0.9) = 1.11; 0.587787 * 2.2 / 2.11 = 0.612858.
    const hits = index.searchOne('cat', 5);
    expect(hits.map((h) => h.id)).toEqual(['p3', 'p0']);
    expect(hits[0]?.score).toBeCloseTo(0.873737, 5);
    expect(hits[1]?.score).toBeCloseTo(0.612858, 5);
  });

  it('sums the terms of an OR query, each with its own idf', () => {
    // bird: n = 1, idf = ln(5.5 / 1.5) = 1.299283; Beta (tf 1, D 4): K = 1.38, 1.299283 * 2.2 / 2.38 = 1.201018.
    // fish: n = 2, idf 0.587787; Gamma (D 2): K = 0.84, 0.587787 * 2.2 / 1.84 = 0.702788; Delta (D 6): 0.587787 * 2.2 /
    // 2.92 = 0.442853.
    const hits = index.searchOne('bird fish', 5);
    expect(hits.map((h) => h.id)).toEqual(['p1', 'p2', 'p3']);
    expect(hits.map((h) => h.score)).toEqual([
      expect.closeTo(1.201018, 5),
      expect.closeTo(0.702788, 5),
      expect.closeTo(0.442853, 5),
    ]);
  });

  it('floors the idf of a term in half the passages or more at 1e-6, as FTS5 does', () => {
    // tree: n = 2 -> 0.5878; dog: n = 2 too. A term in 3 of 6: ln(3.5 / 3.5) = 0 -> 1e-6.
    const dir = tempDir();
    const corpus = writeCorpus(dir, [...TINY.slice(0, 5), ['Zeta', 'rock cat']]);
    return buildIndex({ corpus, out: join(dir, 'i') }).then(() => {
      const ix = new Bm25Index(join(dir, 'i'));
      const hits = ix.searchOne('cat', 5);
      expect(hits).toHaveLength(3);
      for (const h of hits) expect(h.score).toBeLessThan(1e-5);
      ix.close();
    });
  });

  it('matches titles, folds case, stems (porter), drops English stopwords and FTS5 syntax', () => {
    expect(index.searchOne('GAMMA', 3).map((h) => h.id)).toEqual(['p2']);
    expect(index.searchOne('birds', 3).map((h) => h.id)).toEqual(['p1']);
    // "the" and "of" are dropped; quotes, NEAR and column filters are words, not operators.
    expect(index.searchOne('the cat of', 5).map((h) => h.score)).toEqual(index.searchOne('cat', 5).map((h) => h.score));
    expect(index.searchOne('title: "cat" NEAR(', 5).map((h) => h.id)).toEqual(['p3', 'p0']);
    expect(index.searchOne('?!', 5)).toEqual([]);
    expect(index.searchOne('the', 5)).toEqual([]);
  });

  it('with maxTermShare, leaves the common words out of a query that has rarer ones', () => {
    // Share 0.2 of 6 passages: words in more than 1 passage (dog, cat: 2 each) are left out; bird (1) stays,
    // so Beta scores bird alone: 1.201018 (above), where exact BM25 adds dog (tf 2) and ranks Alpha and Delta too.
    const pruned = new Bm25Index(index.dir, { maxTermShare: 0.2 });
    expect(pruned.searchOne('dog cat bird', 5)).toEqual([
      { id: 'p1', title: 'Beta', text: 'dog dog bird', score: expect.closeTo(1.201018, 5) },
    ]);
    // Exact: Beta 1.201018 + dog (tf 2, D 4) 0.587787 * 4.4 / 3.38 = 1.966; Alpha cat + dog 2 * 0.612858 = 1.226; Delta
    // cat 0.873737.
    expect(index.searchOne('dog cat bird', 5).map((h) => [h.id, h.score])).toEqual([
      ['p1', expect.closeTo(1.966188, 5)],
      ['p0', expect.closeTo(1.225716, 5)],
      ['p3', expect.closeTo(0.873737, 5)],
    ]);
    // Only common words: all of them stay (exact).
    expect(pruned.searchOne('dog cat', 5)).toEqual(index.searchOne('dog cat', 5));
    pruned.close();
    expect(() => new Bm25Index(index.dir, { maxTermShare: 0 })).toThrow('maxTermShare must be in (0, 1], got 0');
  });

  it('returns the passage as stored: id, title and text of the contents', () => {
    expect(index.searchOne('rock', 1)).toEqual([
      { id: 'p5', title: 'Zeta', text: 'rock tree', score: expect.any(Number) },
    ]);
  });

  it('answers a batch of queries in order and caps at k', async () => {
    const out = await index.search(['tree', 'cat', 'nothingmatches'], 1);
    expect(out.map((hs) => hs.map((h) => h.id))).toEqual([['p4'], ['p3'], []]);
  });
});

describe('Bm25Index opening', () => {
  it('refuses a folder that is not an index, in one line', () => {
    const dir = tempDir();
    expect(() => new Bm25Index(join(dir, 'absent'))).toThrow(/not found/);
    writeFileSync(join(dir, 'index.json'), '{"format":"other"}');
    expect(() => new Bm25Index(dir)).toThrow(/not a sharp index/);
  });

  it('checks every field of the manifest: a damaged or hand-edited one is one line, never printed or trusted', async () => {
    const dir = tempDir();
    await buildIndex({ corpus: writeCorpus(dir, TINY), out: join(dir, 'good') });
    const good = JSON.parse(readFileSync(join(dir, 'good', 'index.json'), 'utf8')) as Record<string, unknown>;
    const edited = (name: string, m: unknown): string => {
      cpSync(join(dir, 'good'), join(dir, name), { recursive: true });
      writeFileSync(join(dir, name, 'index.json'), typeof m === 'string' ? m : JSON.stringify(m));
      return join(dir, name);
    };
    const { bm25: _bm25, ...noBm25 } = good;
    const cases: [unknown, string][] = [
      [noBm25, 'index.json: bm25: Invalid input: expected object, received undefined (rebuild the index)'],
      [{ ...good, passages: -5 }, 'index.json: passages: Too small: expected number to be >=0 (rebuild the index)'],
      [
        { ...good, passages: 2.5 },
        'index.json: passages: Invalid input: expected int, received number (rebuild the index)',
      ],
      [
        { ...good, corpus: { ...(good.corpus as object), sha256: 'x' } },
        'index.json: corpus.sha256: expected 64 hex digits (rebuild the index)',
      ],
      [{ ...good, version: 9 }, 'format version 9, this program reads 1 (rebuild it)'],
      ['{"format": "sharp-bm25-index", ', 'index.json: not valid JSON'],
      ['[]', 'not a sharp index (index.json is not the manifest of sharp index build)'],
    ];
    for (const [i, [m, why]] of cases.entries()) {
      const idx = edited(`bad${i}`, m);
      expect(() => requireManifest(idx)).toThrow(`index ${idx}: ${why}`);
      expect(() => new Bm25Index(idx)).toThrow(`index ${idx}: ${why}`);
      expect(readManifest(idx)).toBeNull();
    }
    expect(readManifest(join(dir, 'good'))).toEqual(good);
    // A device as the manifest or the database: named, not read (a pipe, which would hang the
    // command, is the fault suite's case: test/faults/retrieval-index.test.ts).
    const dev = edited('dev', '{}');
    rmSync(join(dev, 'index.json'));
    symlinkSync('/dev/zero', join(dev, 'index.json'));
    expect(() => new Bm25Index(dev)).toThrow(
      `index ${dev}: index.json: not a regular file (a folder, device, pipe or socket); not read`,
    );
    const db = edited('db', good);
    rmSync(join(db, 'passages.sqlite'));
    symlinkSync('/dev/zero', join(db, 'passages.sqlite'));
    expect(() => new Bm25Index(db)).toThrow(
      `index ${db}: passages.sqlite: not a regular file (a folder, device, pipe or socket); not read`,
    );
  });
});

describe('Bm25Index stopping', () => {
  it('stops a query mid-way when its stop check answers, and then answers the next one', async () => {
    const dir = tempDir();
    const many = Array.from({ length: 5000 }, (_, i) => [`T${i}`, `alpha beta ${i}`] as const);
    await buildIndex({ corpus: writeCorpus(dir, many), out: join(dir, 'i') });
    const ix = new Bm25Index(join(dir, 'i'));
    let asked = 0;
    expect(() =>
      ix.searchOne('alpha beta', 3, () => {
        asked += 1;
        return asked > 2 ? 'cancelled' : null;
      }),
    ).toThrow(new SearchStopped('cancelled'));
    // Asked before the query and every 1,024 rows scored: it stopped after about 2,000 of 5,000.
    expect(asked).toBe(3);
    await expect(ix.search(['alpha'], 1, { deadline: Date.now() - 1 })).rejects.toEqual(new SearchStopped('deadline'));
    const gone = new AbortController();
    gone.abort();
    await expect(ix.search(['alpha'], 1, { signal: gone.signal })).rejects.toEqual(new SearchStopped('cancelled'));
    expect(ix.searchOne('alpha beta 17', 1)[0]?.id).toBe('p17');
    ix.close();
  });
});
