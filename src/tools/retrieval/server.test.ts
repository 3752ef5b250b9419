import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, TINY, writeCorpus } from '../../../test/retrieval/corpora.ts';
import { close, listen, post, rawRequest } from '../../../test/retrieval/http.ts';
import { Bm25Index } from './bm25-index.ts';
import { buildIndex } from './build-index.ts';
import { SearchStopped, type Hit, type Retriever, type SearchControl } from './retriever.ts';
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

  it('answers 415 to a body that is not JSON by its content type (a form needs no CORS preflight)', async () => {
    const body = JSON.stringify({ queries: ['cat'] });
    for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
      const r = await post(url, body, { 'content-type': type });
      expect(r.status, type).toBe(415);
      expect(r.json).toEqual({ error: `content-type ${type.split(';')[0]}: expected application/json` });
    }
    expect((await post(url, body, { 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
  });

  it('answers 421 to a Host that does not name this loopback server, 200 to one that does', async () => {
    const port = new URL(url).port;
    const ask = (host: string | null): Promise<{ status: number }> =>
      rawRequest(url, `GET /health HTTP/1.1\r\n${host === null ? '' : `Host: ${host}\r\n`}Connection: close\r\n\r\n`);
    expect((await ask(`evil.example:${port}`)).status).toBe(421);
    expect((await ask('127.0.0.1:1')).status).toBe(421);
    expect((await ask(`localhost:${port}`)).status).toBe(200);
    expect((await ask(`127.0.0.1:${port}`)).status).toBe(200);
    // HTTP/1.0 may leave the Host out: refused as well.
    const bare = await rawRequest(url, 'GET /health HTTP/1.0\r\n\r\n');
    expect(bare.status).toBe(421);
  });

  it('answers 413 to an oversized chunked body and 431 to an oversized head, never a reset connection', async () => {
    const port = new URL(url).port;
    const chunk = `${(1000).toString(16)}\r\n${'x'.repeat(1000)}\r\n`;
    const chunked = await rawRequest(
      url,
      `POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      [...Array.from({ length: 200 }, () => chunk), '0\r\n\r\n'],
    );
    expect([chunked.status, chunked.reset, JSON.parse(chunked.body)]).toEqual([
      413,
      false,
      { error: 'body larger than 4096 bytes' },
    ]);
    const declared = await rawRequest(
      url,
      `POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 100000\r\nConnection: close\r\n\r\n',
      [Buffer.alloc(100_000, 0x20)],
    );
    expect([declared.status, declared.reset]).toEqual([413, false]);
    const head = await rawRequest(
      url,
      `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Big: ${'y'.repeat(100_000)}\r\n\r\n`,
    );
    expect([head.status, head.reset, JSON.parse(head.body)]).toEqual([
      431,
      false,
      { error: 'request head larger than this server reads' },
    ]);
    expect((await post(url, JSON.stringify({ queries: ['fish'] }))).status).toBe(200);
  });
});

/** A retriever whose searches end only when their SearchControl stops them; it records how each stopped. */
class Stalling implements Retriever {
  readonly name = 'stalling';
  stopped: string[] = [];
  search(_q: readonly string[], _k: number, control?: SearchControl): Promise<Hit[][]> {
    return new Promise((_resolve, reject) => {
      const stop = (why: 'cancelled' | 'deadline'): void => {
        clearInterval(timer);
        this.stopped.push(why);
        reject(new SearchStopped(why));
      };
      const timer = setInterval(() => {
        if (control?.signal?.aborted) stop('cancelled');
        else if (control?.deadline !== undefined && Date.now() > control.deadline) stop('deadline');
      }, 5);
    });
  }
}

describe('retrieval server: the work of one request', () => {
  it('answers 422 past the time budget, cancels the search of a client gone, and answers /health meanwhile', async () => {
    const retriever = new Stalling();
    const server = createRetrievalServer(retriever, { budgetMs: 300 });
    const url = await listen(server);
    try {
      const t0 = Date.now();
      const slow = post(url, JSON.stringify({ queries: ['a', 'b'] }));
      const health = await fetch(url.replace('/retrieve', '/health'));
      expect(health.status).toBe(200);
      expect(Date.now() - t0).toBeLessThan(300);
      const r = await slow;
      expect(r.status).toBe(422);
      expect((r.json as { error: string }).error).toMatch(
        /^search of 2 queries ran past this server's budget of 300 ms; send fewer queries per request/,
      );
      const gone = new AbortController();
      const lost = fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ queries: ['a'] }),
        signal: gone.signal,
      }).catch(() => 'aborted');
      await new Promise((r) => setTimeout(r, 50));
      gone.abort();
      expect(await lost).toBe('aborted');
      await new Promise((r) => setTimeout(r, 100));
      expect(retriever.stopped).toEqual(['deadline', 'cancelled']);
    } finally {
      await close(server);
    }
  });
});
