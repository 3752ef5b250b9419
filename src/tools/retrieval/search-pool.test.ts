import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, TINY, writeCorpus } from '../../../test/retrieval/corpora.ts';
import { COMMON_WORDS, writeLargeCorpus } from '../../../test/retrieval/large-corpus.ts';
import { Bm25Index } from './bm25-index.ts';
import { buildIndex } from './build-index.ts';
import { SearchStopped } from './retriever.ts';
import { SearchPool } from './search-pool.ts';

/** A query that makes FTS5 score nearly every passage of the generated index. */
const SLOW = COMMON_WORDS.join(' ');

describe('SearchPool', () => {
  let dir: string;
  let pool: SearchPool;
  beforeAll(async () => {
    dir = tempDir();
    await buildIndex({ corpus: writeCorpus(dir, TINY), out: join(dir, 'tiny') });
    await buildIndex({ corpus: writeLargeCorpus(dir, 40_000), out: join(dir, 'large') });
    pool = await SearchPool.open(join(dir, 'large'), { threads: 2 });
  }, 120_000);
  afterAll(async () => {
    await pool?.close();
  });

  it('answers as the index does in-process, in query order', async () => {
    const tiny = await SearchPool.open(join(dir, 'tiny'), { threads: 2 });
    const index = new Bm25Index(join(dir, 'tiny'));
    try {
      const queries = ['cat', 'rock tree', 'bird fish', 'nothing-here', 'dog'];
      expect(await tiny.search(queries, 3)).toEqual(await index.search(queries, 3));
      expect(tiny.manifest.passages).toBe(6);
    } finally {
      index.close();
      await tiny.close();
    }
  });

  it('stops a request whose client is gone or whose deadline passed, mid-query, and goes on serving', async () => {
    const t = performance.now();
    await pool.search([SLOW], 5);
    const oneQuery = performance.now() - t;
    const gone = new AbortController();
    const cancelled = pool.search(
      Array.from({ length: 8 }, () => SLOW),
      5,
      { signal: gone.signal },
    );
    setTimeout(() => gone.abort(), 10);
    const t0 = performance.now();
    await expect(cancelled).rejects.toEqual(new SearchStopped('cancelled'));
    const late = pool.search(
      Array.from({ length: 8 }, () => SLOW),
      5,
      { deadline: Date.now() + 20 },
    );
    await expect(late).rejects.toEqual(new SearchStopped('deadline'));
    // The threads were told to stop: the next query does not wait behind 16 slow ones.
    expect((await pool.search(['common1 word7'], 1))[0]).toHaveLength(1);
    expect(performance.now() - t0).toBeLessThan(Math.max(2000, 4 * oneQuery));
  });

  it('takes the waiting requests in turn: one quick query does not wait behind a long request', async () => {
    const order: string[] = [];
    const long = pool
      .search(
        Array.from({ length: 12 }, () => SLOW),
        5,
      )
      .then(() => order.push('long'));
    const quick = pool.search(['word123'], 5).then(() => order.push('quick'));
    await Promise.all([long, quick]);
    expect(order).toEqual(['quick', 'long']);
  });

  it('refuses a missing index in one line before any thread starts', async () => {
    await expect(SearchPool.open(join(dir, 'none'))).rejects.toThrow(/^index .*none: not found/);
  });
});
