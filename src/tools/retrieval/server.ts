/**
 * A retriever behind Search-R1's protocol (protocol.ts), for `sharp serve retrieval`: rollout
 * workers on other hosts share one index through it. `POST /retrieve` answers the protocol; `GET
 * /health` answers `{"ok": true, ...}`. Requests are bounded (body bytes, queries per request,
 * query length, topk); a malformed one gets 400 with `{"error": "<one line>"}`, a body too large
 * 413, another path 404, another method 405.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { DEFAULT_LIMITS, parseRetrieveRequest, retrieveResponse, type RequestLimits } from './protocol.ts';
import type { Retriever } from './retriever.ts';

export interface ServerOptions {
  limits?: RequestLimits;
  /** Largest request body, in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Extra fields of the health answer (passages, index folder). */
  health?: Record<string, unknown>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The request body, or an HttpError 413 past `max` bytes. */
function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > max) {
      reject(new HttpError(413, `body of ${declared} bytes, at most ${max}`));
      req.resume();
      return;
    }
    const parts: Buffer[] = [];
    let total = 0;
    req.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > max) {
        reject(new HttpError(413, `body larger than ${max} bytes`));
        req.destroy();
        return;
      }
      parts.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

export function createRetrievalServer(retriever: Retriever, opts: ServerOptions = {}): Server {
  const limits = opts.limits ?? DEFAULT_LIMITS;
  const maxBody = opts.maxBodyBytes ?? 1 << 20;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/health') {
      if (req.method !== 'GET') throw new HttpError(405, 'use GET');
      send(res, 200, { ok: true, retriever: retriever.name, ...opts.health });
      return;
    }
    if (path !== '/retrieve') throw new HttpError(404, `no such path ${path} (POST /retrieve)`);
    if (req.method !== 'POST') throw new HttpError(405, 'use POST');
    const text = await readBody(req, maxBody);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, 'body: not valid JSON');
    }
    const parsed = parseRetrieveRequest(body, limits);
    if (typeof parsed === 'string') throw new HttpError(400, parsed);
    const hits = await retriever.search(parsed.queries, parsed.topk);
    send(res, 200, retrieveResponse(hits, parsed.returnScores));
  };
  return createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (err instanceof HttpError) {
        if (err.status === 405)
          res.setHeader('allow', new URL(req.url ?? '/', 'http://localhost').pathname === '/health' ? 'GET' : 'POST');
        send(res, err.status, { error: err.message });
      } else {
        send(res, 500, { error: (err instanceof Error ? err.message : String(err)).split('\n')[0] });
      }
    });
  });
}
