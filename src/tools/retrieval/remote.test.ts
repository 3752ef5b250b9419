import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, TINY, writeCorpus } from '../../../test/retrieval/corpora.ts';
import { close, listen, serve } from '../../../test/retrieval/http.ts';
import type { Server } from 'node:http';
import { Bm25Index } from './bm25-index.ts';
import { buildIndex } from './build-index.ts';
import { retrieverFor } from './open.ts';
import { RemoteRetriever } from './remote.ts';
import { createRetrievalServer } from './server.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

async function fake(handler: Parameters<typeof serve>[0]): Promise<string> {
  const { url, server } = await serve(handler);
  servers.push(server);
  return url;
}

describe('RemoteRetriever', () => {
  it('searches our own server: the same hits as the index in-process, queries of one tick in one request', async () => {
    const dir = tempDir();
    await buildIndex({ corpus: writeCorpus(dir, TINY), out: join(dir, 'idx') });
    const index = new Bm25Index(join(dir, 'idx'));
    let requests = 0;
    const server = createRetrievalServer({ name: 'counted', search: (qs, k) => (requests++, index.search(qs, k)) });
    servers.push(server);
    const remote = new RemoteRetriever({ url: await listen(server), timeoutMs: 5000, retries: 0 });
    const [a, b] = await Promise.all([remote.search(['cat'], 2), remote.search(['bird fish'], 2)]);
    expect(a).toEqual(await index.search(['cat'], 2));
    expect(b).toEqual(await index.search(['bird fish'], 2));
    expect(requests).toBe(1);
    index.close();
  });

  it('gives up on a slow server within timeout x tries, in one line', async () => {
    let calls = 0;
    const url = await fake((_req, res) => {
      calls += 1;
      setTimeout(() => res.end('{"result":[[]]}'), 3000);
    });
    const remote = new RemoteRetriever({ url, timeoutMs: 150, retries: 1, backoffMs: 10 });
    const t0 = performance.now();
    await expect(remote.search(['q'], 3)).rejects.toThrow(`retriever ${url}: no answer within 150 ms (2 tries)`);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(calls).toBe(2);
  });

  it('says a server that is down is down, after its retries', async () => {
    const { url, server } = await serve(() => {});
    await close(server);
    const remote = new RemoteRetriever({ url, timeoutMs: 1000, retries: 2, backoffMs: 5 });
    await expect(remote.search(['q'], 3)).rejects.toThrow(`retriever ${url}: cannot connect (ECONNREFUSED) (3 tries)`);
  });

  it('retries a 5xx and takes the answer that follows', async () => {
    let calls = 0;
    const url = await fake((_req, res) => {
      calls += 1;
      if (calls === 1) {
        res.statusCode = 503;
        res.end('busy');
        return;
      }
      res.end(JSON.stringify({ result: [[{ document: { id: 'x', contents: '"T"\nbody' }, score: 2 }]] }));
    });
    const remote = new RemoteRetriever({ url, timeoutMs: 1000, retries: 2, backoffMs: 5 });
    expect(await remote.search(['q'], 1)).toEqual([[{ id: 'x', title: 'T', text: 'body', score: 2 }]]);
    expect(calls).toBe(2);
  });

  it('does not retry garbage or a 4xx, and says what was wrong', async () => {
    let calls = 0;
    const garbage = await fake((_req, res) => {
      calls += 1;
      res.end('<html>proxy error</html>');
    });
    await expect(new RemoteRetriever({ url: garbage, timeoutMs: 1000, retries: 3 }).search(['q'], 1)).rejects.toThrow(
      `retriever ${garbage}: the response is not JSON`,
    );
    expect(calls).toBe(1);
    const wrong = await fake((_req, res) => res.end('{"result":[]}'));
    await expect(new RemoteRetriever({ url: wrong, timeoutMs: 1000, retries: 3 }).search(['q'], 1)).rejects.toThrow(
      'response: 0 result lists for 1 queries',
    );
    const notFound = await fake((_req, res) => {
      res.statusCode = 404;
      res.end('{"detail":"Not Found"}');
    });
    await expect(new RemoteRetriever({ url: notFound, timeoutMs: 1000, retries: 3 }).search(['q'], 1)).rejects.toThrow(
      'HTTP 404 ({"detail":"Not Found"})',
    );
  });

  it('caps the response body it reads', async () => {
    const url = await fake((_req, res) =>
      res.end(JSON.stringify({ result: [[{ id: 'x', contents: 'y'.repeat(10_000) }]] })),
    );
    await expect(
      new RemoteRetriever({ url, timeoutMs: 1000, retries: 0, maxResponseBytes: 1000 }).search(['q'], 1),
    ).rejects.toThrow('response larger than 1000 bytes');
  });

  it('refuses a URL that is not http(s)', () => {
    expect(() => new RemoteRetriever({ url: 'redis://x', timeoutMs: 1, retries: 0 })).toThrow(
      "retriever 'redis://x': not an http(s) URL",
    );
  });

  it('refuses a URL on a port fetch will not connect to, in one line, before any search', () => {
    for (const url of ['http://127.0.0.1:6000/retrieve', 'http://h:10080/retrieve', 'https://h:22/retrieve']) {
      expect(() => new RemoteRetriever({ url, timeoutMs: 1, retries: 0 })).toThrow(
        new RegExp(
          `^retriever '${url}': port \\d+ is one that fetch refuses to connect to .*; serve the retriever on `,
        ),
      );
    }
    expect(
      () => new RemoteRetriever({ url: 'http://127.0.0.1:8000/retrieve', timeoutMs: 1, retries: 0 }),
    ).not.toThrow();
    expect(() => new RemoteRetriever({ url: 'http://h/retrieve', timeoutMs: 1, retries: 0 })).not.toThrow();
    // Through the rollout's config: the UserError (one line, exit 2) of every command that searches.
    expect(() =>
      retrieverFor({
        backend: 'remote',
        url: 'http://127.0.0.1:6000/retrieve',
        timeoutMs: 1000,
        retries: 0,
      } as Parameters<typeof retrieverFor>[0]),
    ).toThrow(/^rollout\.search\.url: retriever 'http:\/\/127\.0\.0\.1:6000\/retrieve': port 6000 is one/);
  });
});
