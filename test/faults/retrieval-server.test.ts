import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIndex } from '../../src/tools/retrieval/build-index.ts';
import { start } from '../retrieval/cli.ts';
import { sharpTimed } from '../retrieval/cli-timed.ts';
import { tempDir } from '../retrieval/corpora.ts';
import { rawRequest } from '../retrieval/http.ts';
import { COMMON_WORDS, writeLargeCorpus } from '../retrieval/large-corpus.ts';

/**
 * `sharp serve retrieval` (the real program) on a generated index of 150,000 passages, under the
 * slowest request a client may send: 64 queries of 32 words each found in a third of the passages,
 * so FTS5 scores nearly every passage 64 times. /health must keep answering within a second, a
 * quick query must not wait behind it, the request must end at the server's time budget (422), and
 * a client that gives up must free the threads. Plus the requests a browser page or a broken client
 * sends: a form POST, a foreign Host, an oversized chunked body or head, and ports no client reaches.
 */
const PASSAGES = 150_000;
const SLOW_QUERY = COMMON_WORDS.join(' ');

let root: string;
let index: string;
let child: ChildProcess | undefined;
let url: string;

beforeAll(async () => {
  root = tempDir('sharp-serve-faults-');
  index = join(root, 'idx');
  await buildIndex({ corpus: writeLargeCorpus(root, PASSAGES), out: index });
  rmSync(join(root, 'large.jsonl'));
  const s = await start(
    ['serve', 'retrieval', '--index', index, '--port', '0'],
    /at (http:\/\/127\.0\.0\.1:\d+\/retrieve)\n/,
  );
  child = s.child;
  url = s.match[1] as string;
}, 300_000);

afterAll(async () => {
  if (child && child.exitCode === null)
    await new Promise((r) => {
      child?.once('close', r);
      child?.kill('SIGTERM');
    });
  rmSync(root, { recursive: true, force: true });
});

const retrieve = (queries: string[], signal?: AbortSignal): Promise<Response> =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ queries, topk: 5 }),
    signal: signal ?? AbortSignal.timeout(120_000),
  });

/** Milliseconds GET /health took, measured from here. */
async function healthMs(): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(url.replace('/retrieve', '/health'), { signal: AbortSignal.timeout(30_000) });
  expect(r.status).toBe(200);
  await r.json();
  return performance.now() - t0;
}

describe('one pathological request against a large index', () => {
  it('leaves /health answering within a second, lets a quick query through, and ends at the budget', async () => {
    const t0 = performance.now();
    const slow = retrieve(Array.from({ length: 64 }, () => SLOW_QUERY)).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { error?: string },
      ms: performance.now() - t0,
    }));
    await new Promise((r) => setTimeout(r, 500));
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      times.push(await healthMs());
      await new Promise((r) => setTimeout(r, 300));
    }
    const q0 = performance.now();
    const quick = await retrieve(['word123 word4567']);
    const quickMs = performance.now() - q0;
    const done = await slow;
    const sorted = [...times].sort((a, b) => a - b);
    const list = times.map((t) => t.toFixed(1)).join(', ');
    console.log(
      `retrieval-server faults: ${PASSAGES} passages, /health during 64 x 32-word queries: median ` +
        `${sorted[5]?.toFixed(1)} ms, max ${sorted[9]?.toFixed(1)} ms (${list}); a one-query request meanwhile ` +
        `${quickMs.toFixed(0)} ms; the slow request ended after ${done.ms.toFixed(0)} ms with ${done.status}`,
    );
    // A loaded machine may stall one probe: nine of ten within a second.
    expect(times.filter((t) => t < 1000).length).toBeGreaterThanOrEqual(9);
    expect(quick.status).toBe(200);
    expect(quickMs).toBeLessThan(5000);
    // 64 queries of ~1 s of scoring each on 2-4 threads: past the 10 s budget, answered in one line.
    expect(done.status).toBe(422);
    expect(done.body.error).toMatch(/^search of 64 queries ran past this server's budget of 10000 ms/);
    expect(done.ms).toBeLessThan(20_000);
  }, 120_000);

  it('stops the work of a client that went away: the next request does not wait for it', async () => {
    const gone = new AbortController();
    const lost = retrieve(
      Array.from({ length: 64 }, () => SLOW_QUERY),
      gone.signal,
    ).catch(() => 'aborted');
    await new Promise((r) => setTimeout(r, 500));
    gone.abort();
    expect(await lost).toBe('aborted');
    const t0 = performance.now();
    const r = await retrieve([SLOW_QUERY]);
    expect(r.status).toBe(200);
    // One slow query alone (about a second on an idle core), not 64 of them shared between the threads.
    expect(performance.now() - t0).toBeLessThan(8000);
  }, 120_000);
});

describe('requests a page or a broken client sends', () => {
  it('form POST 415, foreign Host 421, oversized chunked body 413, oversized head 431', async () => {
    const form = await fetch(url, { method: 'POST', body: new URLSearchParams({ queries: 'x' }) });
    expect(form.status).toBe(415);
    const port = new URL(url).port;
    const foreign = await rawRequest(
      url,
      `GET /health HTTP/1.1\r\nHost: rebound.example:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(foreign.status).toBe(421);
    const piece = `${(0x10000).toString(16)}\r\n${'x'.repeat(0x10000)}\r\n`;
    const chunked = await rawRequest(
      url,
      `POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      [...Array.from({ length: 40 }, () => piece), '0\r\n\r\n'],
    );
    expect([chunked.status, chunked.reset]).toEqual([413, false]);
    const head = await rawRequest(
      url,
      `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Pad: ${'p'.repeat(100_000)}\r\n\r\n`,
    );
    expect([head.status, head.reset]).toEqual([431, false]);
    expect(await healthMs()).toBeLessThan(5000);
  }, 60_000);

  it('a --port out of range or one fetch refuses is one line, exit 2', async () => {
    for (const [port, why] of [
      ['-1', /--port -1 is not a port number \(0-65535\)$/],
      ['70000', /--port 70000 is not a port number \(0-65535\)$/],
      ['6000', /--port 6000 is a port that fetch clients refuse to connect to/],
    ] as const) {
      const r = await sharpTimed(['serve', 'retrieval', '--index', index, '--port', port], root, 30_000);
      expect([r.code, r.stdout, r.timedOut]).toEqual([2, '', false]);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(why);
    }
  }, 120_000);
});
