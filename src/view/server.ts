import { closeSync, constants, createReadStream, fstatSync, openSync, realpathSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { extname, isAbsolute, relative, resolve, sep } from 'node:path';
import { isLoopback, loopbackHostAllowed } from '../net/loopback.ts';
import { pageHtml, pagePolicy } from './html.ts';
import type { ViewIndex } from './types.ts';

/**
 * The `sharp view` HTTP server (node:http, no framework): the page, its script, the run's index and
 * step records as JSON, and raw files of the run folder under /files/. It binds 127.0.0.1 unless
 * told otherwise, answers only GET/HEAD, refuses every path that resolves outside the run folder
 * (`..`, encoded `..`, absolute paths, symlinks pointing out), and on loopback refuses requests whose
 * Host is not a loopback name (a DNS-rebinding page cannot read the run).
 */
export interface ViewServerOptions {
  /** The run folder: the only files served. */
  root: string;
  host: string;
  /** 0 = any free port. */
  port: number;
  script: string;
  index: () => Promise<ViewIndex>;
  /** A step record's JSON by file stem, or undefined when there is none. */
  step: (name: string) => Promise<unknown>;
}

export interface ViewServer {
  url: string;
  port: number;
  close: () => Promise<void>;
}

const STEP_NAME = /^(step|eval)-\d{6}$/;

/** Run files are shown as what they are, never as HTML or script of this origin. */
const FILE_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
  '.jsonl': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.yaml': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** Longest request target answered: far past any path of a run folder, short of the system's PATH_MAX (4096). */
const MAX_URL_CHARS = 2048;

/**
 * The file a /files/ path names inside `root`, or null when it is not one (escapes the folder,
 * malformed encoding, NUL byte). Symlinks are resolved before the check.
 */
export function resolveInside(root: string, urlPath: string): string | null {
  let rel: string;
  try {
    rel = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (rel.includes('\0') || rel.includes('\\') || isAbsolute(rel)) return null;
  const realRoot = realpathSync(root);
  const target = resolve(realRoot, rel);
  let real: string;
  try {
    real = realpathSync(target);
  } catch {
    // Missing: still refuse it when the name itself points outside.
    const r = relative(realRoot, target);
    return r.startsWith('..') || isAbsolute(r) ? null : target;
  }
  const r = relative(realRoot, real);
  if (r === '' || r.startsWith('..') || isAbsolute(r)) return null;
  return real;
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  head = false,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    ...extra,
  });
  res.end(head ? undefined : body);
}

/**
 * The answer to a file that could not be opened: 403 for permissions, 404 for a vanished file or a
 * name the system cannot take, else 500. Only the error's code is sent: the system's message names
 * the server's absolute path.
 */
export function openFailure(err: NodeJS.ErrnoException): [number, string] {
  if (err.code === 'EACCES' || err.code === 'EPERM') return [403, 'forbidden: the server may not read this file'];
  if (err.code === 'ENOENT' || err.code === 'ENOTDIR' || err.code === 'ELOOP' || err.code === 'ENAMETOOLONG')
    return [404, 'not found'];
  return [500, `error: ${err.code ?? 'unknown'}`];
}

/**
 * An error's first line for a response body, without the server's absolute paths: a system error
 * (its message names the full path) is its code alone; elsewhere a path inside the run folder is
 * shown relative to it and any other absolute path as `<path>`.
 */
export function publicMessage(err: unknown, root: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  const line = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
  const abs = resolve(root);
  return line
    .split(`${abs}${sep}`)
    .join('')
    .split(abs)
    .join('.')
    .replace(/(^|[\s'"(=])\/[^\s'"()]*/g, '$1<path>');
}

export function startViewServer(o: ViewServerOptions): Promise<ViewServer> {
  const html = pageHtml({ scriptUrl: 'app.js' });
  const loopbackOnly = isLoopback(o.host);
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const head = req.method === 'HEAD';
    const text = (status: number, msg: string): void =>
      send(res, status, 'text/plain; charset=utf-8', `${msg}\n`, head);
    if (req.method !== 'GET' && !head) return text(405, 'method not allowed');
    if (loopbackOnly && !loopbackHostAllowed(req.headers.host, req.socket.localPort ?? -1))
      return text(403, 'forbidden host');
    const raw = req.url ?? '/';
    if (raw.length > MAX_URL_CHARS) return text(414, 'URI too long');
    const path = raw.split('?')[0] ?? '/';
    try {
      if (path === '/' || path === '/index.html')
        return send(res, 200, 'text/html; charset=utf-8', html, head, {
          'Content-Security-Policy': pagePolicy(`'self'`),
        });
      if (path === '/favicon.ico') return send(res, 204, 'text/plain', '', head);
      if (path === '/app.js') return send(res, 200, 'text/javascript; charset=utf-8', o.script, head);
      // The index and the step records are read asynchronously: other requests are answered meanwhile.
      const failed = (err: unknown): void => text(500, `error: ${publicMessage(err, o.root)}`);
      if (path === '/api/index.json') {
        o.index().then((idx) => send(res, 200, 'application/json; charset=utf-8', JSON.stringify(idx), head), failed);
        return;
      }
      if (path.startsWith('/api/steps/')) {
        const name = path.slice('/api/steps/'.length);
        if (!STEP_NAME.test(name)) return text(404, 'no such step');
        o.step(name).then(
          (rec) =>
            rec === undefined
              ? text(404, 'no such step')
              : send(res, 200, 'application/json; charset=utf-8', JSON.stringify(rec), head),
          failed,
        );
        return;
      }
      if (path.startsWith('/files/')) {
        const file = resolveInside(o.root, path.slice('/files/'.length));
        if (file === null) return text(403, 'forbidden: outside the run folder');
        // Opened before anything is sent, so a file the server may not read (EACCES) or one that a
        // live run replaced since the name was resolved (ENOENT) is a status, never a crash; the
        // size sent is that of the file opened.
        let fd: number;
        try {
          // O_NONBLOCK: a named pipe in the folder would otherwise block the event loop (every request) until a writer
          // came.
          fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
        } catch (err) {
          return text(...openFailure(err as NodeJS.ErrnoException));
        }
        let size: number;
        try {
          const st = fstatSync(fd);
          if (!st.isFile()) {
            closeSync(fd);
            return text(404, 'not a file');
          }
          size = st.size;
        } catch (err) {
          closeSync(fd);
          return text(500, `error: ${publicMessage(err, o.root)}`);
        }
        res.writeHead(200, {
          'Content-Type': FILE_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
          'Content-Length': size,
          'X-Content-Type-Options': 'nosniff',
          'Content-Security-Policy': 'sandbox',
          'Cache-Control': 'no-store',
        });
        if (head || size === 0) {
          closeSync(fd);
          return void res.end();
        }
        // pipeline closes the file and the response on an error of either side (a read error after
        // the headers can only cut the body short) and never leaves an 'error' event unhandled.
        pipeline(createReadStream(file, { fd, start: 0, end: size - 1 }), res, () => undefined);
        return;
      }
      return text(404, 'not found');
    } catch (err) {
      return text(500, `error: ${publicMessage(err, o.root)}`);
    }
  };
  const server = createServer(handle);
  return new Promise((res, rej) => {
    server.once('error', rej);
    server.listen(o.port, o.host, () => {
      server.off('error', rej);
      const port = (server.address() as AddressInfo).port;
      const shown = o.host.includes(':') ? `[${o.host}]` : o.host;
      res({
        url: `http://${shown}:${port}/`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
