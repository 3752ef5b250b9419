/**
 * A client of a Search-R1 retrieval server (protocol.ts). Every request has a deadline
 * (`timeoutMs`, covering the body too), a network error, a timeout or a 5xx answer is retried at
 * most `retries` times with a doubling pause, and then the search rejects with one line naming the
 * server, so a server that is down or stalls ends each search in bounded time, never a hung
 * rollout. A 4xx answer or a body that is not the protocol's shape is not retried (asking again
 * gets the same answer).
 *
 * The queries of all trajectories that search in the same turn of the event loop go out in one
 * request (up to `maxBatch`), as Search-R1's own rollouts batch them: the server answers a batch in
 * about the time of one query.
 */
import { isBlockedPort } from './ports.ts';
import { parseRetrieveResponse, retrieveRequestBody } from './protocol.ts';
import type { Hit, Retriever } from './retriever.ts';

export interface RemoteOptions {
  /** The /retrieve URL, e.g. http://127.0.0.1:8000/retrieve. */
  url: string;
  timeoutMs: number;
  retries: number;
  /** Most queries per request (default 64). */
  maxBatch?: number;
  /** Pause before the first retry, doubled for each further one (default 200 ms). */
  backoffMs?: number;
  /** Largest response body read (default 32 MiB). */
  maxResponseBytes?: number;
}

/** An error asking again would not fix. */
class Permanent extends Error {}

interface Waiting {
  query: string;
  k: number;
  resolve: (hits: Hit[]) => void;
  reject: (err: Error) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
    return `no answer within ${timeoutMs} ms`;
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `cannot connect (${cause.code})`;
  return (err instanceof Error ? (cause?.message ?? err.message) : String(err)).split('\n')[0] ?? 'unknown error';
}

/** The body as text, at most `max` bytes (a larger one is an error, not an out-of-memory). */
async function readCapped(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      throw new Permanent(`response larger than ${max} bytes`);
    }
    parts.push(value);
  }
  return Buffer.concat(parts).toString('utf8');
}

export class RemoteRetriever implements Retriever {
  readonly name: string;
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(private readonly opts: RemoteOptions) {
    let u: URL;
    try {
      u = new URL(opts.url);
    } catch {
      throw new Error(`retriever '${opts.url}': not a URL (expected http://host:port/retrieve)`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new Error(`retriever '${opts.url}': not an http(s) URL`);
    // fetch would refuse every request ("bad port"): said once here instead of as every search's error.
    const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
    if (isBlockedPort(port))
      throw new Error(
        `retriever '${opts.url}': port ${port} is one that fetch refuses to connect to (the Fetch standard's ` +
          `"bad ports"); serve the retriever on another port`,
      );
    this.name = `retriever ${opts.url}`;
  }

  search(queries: readonly string[], k: number): Promise<Hit[][]> {
    return Promise.all(
      queries.map((query) => new Promise<Hit[]>((resolve, reject) => this.enqueue({ query, k, resolve, reject }))),
    );
  }

  private enqueue(w: Waiting): void {
    this.queue.push(w);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const waiting = this.queue;
    this.queue = [];
    const max = this.opts.maxBatch ?? 64;
    const byK = new Map<number, Waiting[]>();
    for (const w of waiting) byK.set(w.k, [...(byK.get(w.k) ?? []), w]);
    for (const [k, ws] of byK) {
      for (let i = 0; i < ws.length; i += max) {
        const batch = ws.slice(i, i + max);
        this.post(
          batch.map((w) => w.query),
          k,
        ).then(
          (hits) => batch.forEach((w, j) => w.resolve(hits[j] as Hit[])),
          (err: Error) => batch.forEach((w) => w.reject(err)),
        );
      }
    }
  }

  /** One request with its retries. */
  private async post(queries: readonly string[], k: number): Promise<Hit[][]> {
    const { url, timeoutMs, retries } = this.opts;
    const body = retrieveRequestBody(queries, k);
    let last = '';
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep((this.opts.backoffMs ?? 200) * 2 ** (attempt - 1));
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await readCapped(res, this.opts.maxResponseBytes ?? 32 << 20);
        if (res.status >= 500) {
          last = `HTTP ${res.status}`;
          continue;
        }
        if (!res.ok) throw new Permanent(`HTTP ${res.status} (${text.replace(/\s+/g, ' ').slice(0, 200)})`);
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw new Permanent('the response is not JSON');
        }
        try {
          return parseRetrieveResponse(json, queries.length);
        } catch (err) {
          throw new Permanent((err as Error).message);
        }
      } catch (err) {
        if (err instanceof Permanent) throw new Error(`${this.name}: ${err.message}`);
        last = describe(err, timeoutMs);
      }
    }
    throw new Error(`${this.name}: ${last} (${retries + 1} ${retries === 0 ? 'try' : 'tries'})`);
  }
}
