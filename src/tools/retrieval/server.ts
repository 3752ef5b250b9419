/**
 * A retriever behind Search-R1's protocol (protocol.ts), for `sharp serve retrieval`: rollout
 * workers on other hosts share one index through it. `POST /retrieve` answers the protocol; `GET
 * /health` answers `{"ok": true, ...}`.
 *
 * Every request is bounded before and while it is served:
 * - its head: at most `maxHeaderBytes` (431), and on loopback a Host that names this server (421),
 *   so a page of another site that rebinds its DNS name to 127.0.0.1 gets nothing;
 * - its body: `application/json` only (415: a browser's form POST needs no CORS preflight), at most
 *   `maxBodyBytes` however it is sent (413, Content-Length or chunked: counted as it arrives), then
 *   the protocol's own bounds (queries, query length, topk: 400);
 * - its work: `budgetMs` of search (422 past it, nothing partial), stopped at once when its client
 *   goes away. The retriever runs the searches off this thread (search-pool.ts), so /health and
 *   other requests are answered meanwhile.
 * A refused body is read to its end (up to DRAIN_BYTES more) before the answer, so the client reads
 * the status instead of a reset connection.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { isLoopback, loopbackHostAllowed } from '../../net/loopback.ts';
import { DEFAULT_LIMITS, parseRetrieveRequest, retrieveResponse, type RequestLimits } from './protocol.ts';
import { SearchStopped, type Retriever } from './retriever.ts';

export interface ServerOptions {
  limits?: RequestLimits;
  /** Largest request body, in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Largest request head (request line and headers), in bytes (default 16 KiB, Node's own). */
  maxHeaderBytes?: number;
  /** Longest search of one request, in milliseconds, waiting for a thread included (default 10,000). */
  budgetMs?: number;
  /** Extra fields of the health answer (passages, index folder). */
  health?: Record<string, unknown>;
}

/** rollout.search.timeoutMs's default: past it our own client has given up on the request anyway. */
const DEFAULT_BUDGET_MS = 10_000;

/** Bytes of a refused body still read (and dropped) before the answer; past it the connection is closed. */
const DRAIN_BYTES = 16 << 20;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown, close = false): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

/**
 * The request body, or an HttpError 413 past `max` bytes, whether announced by Content-Length or
 * found while a chunked body arrives. A refused body is still read to its end (dropped) so that the
 * answer reaches the client; see drain.
 */
function readBody(req: IncomingMessage, max: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max)
    return drain(req).then(() => Promise.reject(new HttpError(413, `body of ${declared} bytes, at most ${max}`)));
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let total = 0;
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total <= max) return void parts.push(chunk);
      req.off('data', onData);
      parts.length = 0;
      drain(req).then(() => reject(new HttpError(413, `body larger than ${max} bytes`)), reject);
    };
    req.on('data', onData);
    req.on('end', () => {
      if (total <= max) resolve(Buffer.concat(parts).toString('utf8'));
    });
    req.on('error', reject);
  });
}

/**
 * Reads what is left of a request body and drops it, at most DRAIN_BYTES: a server that answers and
 * closes while the client still sends makes the kernel reset the connection, and the client then
 * loses the answer. Past DRAIN_BYTES the answer goes out anyway (the connection is closed after it).
 */
function drain(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let dropped = 0;
    const done = (): void => {
      req.off('data', onData);
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      dropped += chunk.length;
      if (dropped > DRAIN_BYTES) {
        req.pause();
        done();
      }
    };
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.resume();
  });
}

/** Answers a request whose head Node's parser refused (too large, malformed) instead of resetting the connection. */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy();
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const text = JSON.stringify({
    error: status === 431 ? 'request head larger than this server reads' : 'malformed request',
  });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
  // Closing with unread bytes makes the kernel reset the connection and the client lose the answer:
  // what it still sends is read and dropped for a moment first.
  socket.on('data', () => undefined);
  socket.resume();
  setTimeout(() => socket.destroy(), 2000).unref();
}

export function createRetrievalServer(retriever: Retriever, opts: ServerOptions = {}): Server {
  const limits = opts.limits ?? DEFAULT_LIMITS;
  const maxBody = opts.maxBodyBytes ?? 1 << 20;
  const budgetMs = opts.budgetMs ?? DEFAULT_BUDGET_MS;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const local = server.address();
    if (typeof local === 'object' && local !== null && isLoopback(local.address.replace(/^::ffff:/, '')))
      if (!loopbackHostAllowed(req.headers.host, local.port))
        throw new HttpError(
          421,
          `Host '${req.headers.host ?? ''}' does not name this server (loopback, port ${local.port})`,
        );
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/health') {
      if (req.method !== 'GET') throw new HttpError(405, 'use GET');
      send(res, 200, { ok: true, retriever: retriever.name, ...opts.health });
      return;
    }
    if (path !== '/retrieve') throw new HttpError(404, `no such path ${path} (POST /retrieve)`);
    if (req.method !== 'POST') throw new HttpError(405, 'use POST');
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json')
      throw new HttpError(415, `content-type ${type || '(none)'}: expected application/json`);
    const text = await readBody(req, maxBody);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, 'body: not valid JSON');
    }
    const parsed = parseRetrieveRequest(body, limits);
    if (typeof parsed === 'string') throw new HttpError(400, parsed);
    // A client that goes away (its timeout, a killed worker) stops its search: no thread works for nobody.
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableEnded) gone.abort();
    });
    try {
      const hits = await retriever.search(parsed.queries, parsed.topk, {
        signal: gone.signal,
        deadline: Date.now() + budgetMs,
      });
      send(res, 200, retrieveResponse(hits, parsed.returnScores));
    } catch (err) {
      if (!(err instanceof SearchStopped)) throw err;
      if (err.reason === 'cancelled') return;
      throw new HttpError(
        422,
        `search of ${parsed.queries.length} ${parsed.queries.length === 1 ? 'query' : 'queries'} ran past this ` +
          `server's budget of ${budgetMs} ms; send fewer queries per request or rarer words (or serve with ` +
          `--max-term-share)`,
      );
    }
  };
  const fail = async (req: IncomingMessage, res: ServerResponse, err: unknown): Promise<void> => {
    // A request refused before its body was read (415, 421, 404): read it first, as readBody does.
    await drain(req);
    if (res.headersSent || res.destroyed) return void res.destroy();
    const status = err instanceof HttpError ? err.status : 500;
    if (status === 405)
      res.setHeader('allow', new URL(req.url ?? '/', 'http://localhost').pathname === '/health' ? 'GET' : 'POST');
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    // Past DRAIN_BYTES the rest of the body is still on its way: the connection cannot serve another request.
    send(res, status, { error: message }, !req.complete);
  };
  const server = createServer({ maxHeaderSize: opts.maxHeaderBytes ?? 16 * 1024 }, (req, res) => {
    void handle(req, res)
      .catch((err: unknown) => fail(req, res, err))
      .catch(() => res.destroy());
  });
  server.on('clientError', answerClientError);
  return server;
}
