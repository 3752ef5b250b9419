import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, TINY, writeCorpus } from '../../../test/retrieval/corpora.ts';
import { close, listen, post } from '../../../test/retrieval/http.ts';
import { Bm25Index } from './bm25-index.ts';
import { buildIndex } from './build-index.ts';
import { createRetrievalServer } from './server.ts';

describe('retrieval server', () => {
  let index: Bm25Index;
  let server: ReturnType<typeof createRetrievalServer>;
  let url: string;
  beforeAll(async () => {
    const dir = tempDir();
    await buildIndex({ corpus: writeCorpus(dir, TINY), out: join(dir, 'idx') });
    index = new Bm25Index(join(dir, 'idx'));
    server = createRetrievalServer(index, { maxBodyBytes: 4096, health: { passages: 6 } });
    url = await listen(server);
  });
  afterAll(async () => {
    await close(server);
    index.close();
  });

  it('answers POST /retrieve in the Search-R1 shape, scored and bare', async () => {
    const scored = await post(url, JSON.stringify({ queries: ['cat', 'rock'], topk: 1, return_scores: true }));
    expect(scored.status).toBe(200);
    expect(scored.json).toEqual({
      result: [
        [{ document: { id: 'p3', contents: '"Delta"\ncat cat cat cat fish' }, score: expect.closeTo(0.873737, 5) }],
        [{ document: { id: 'p5', contents: '"Zeta"\nrock tree' }, score: expect.any(Number) }],
      ],
    });
    const bare = await post(url, JSON.stringify({ queries: ['tree'] }));
    // No topk: the default 3; tree is in two passages.
    expect(bare.json).toEqual({
      result: [
        [
          { id: 'p4', contents: '"Epsilon"\ntree' },
          { id: 'p5', contents: '"Zeta"\nrock tree' },
        ],
      ],
    });
  });

  it('answers malformed requests with 400 and one line, and bounds size, topk, path and method', async () => {
    expect(await post(url, '{not json')).toEqual({ status: 400, json: { error: 'body: not valid JSON' } });
    expect(await post(url, JSON.stringify({ queries: 'cat' }))).toEqual({
      status: 400,
      json: { error: 'queries: expected a list of strings' },
    });
    expect(await post(url, JSON.stringify({ queries: ['cat'], topk: 1000 }))).toEqual({
      status: 400,
      json: { error: 'topk: expected an integer 1..100' },
    });
    expect((await post(url, JSON.stringify({ queries: ['x'.repeat(5000)] }))).status).toBe(413);
    expect((await post(url.replace('/retrieve', '/search'), '{}')).status).toBe(404);
    const get = await fetch(url);
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    const health = await fetch(url.replace('/retrieve', '/health'));
    expect(await health.json()).toEqual({ ok: true, retriever: expect.stringMatching(/^index /), passages: 6 });
  });

  it('still answers after bad requests (each is answered and closed, none hangs)', async () => {
    const results = await Promise.all([post(url, 'null'), post(url, JSON.stringify({ queries: ['fish'], topk: 2 }))]);
    expect(results.map((r) => r.status)).toEqual([400, 200]);
  });
});
