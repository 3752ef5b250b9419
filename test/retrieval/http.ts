import { createServer, type RequestListener, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

/** Test support: an HTTP server on a free loopback port, and its /retrieve URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/retrieve`;
}

export async function serve(handler: RequestListener): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  return { url: await listen(server), server };
}

export function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((r) => server.close(() => r()));
}

/** POSTs `body` (a string, sent as is) and returns the status and parsed JSON answer. */
export async function post(
  url: string,
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

/**
 * Sends `head` and then `body` (a generator of pieces, written as the socket drains) on a raw TCP
 * connection and reads until the server closes it: the status line's code, the body, and whether
 * the connection was reset instead of answered.
 */
export function rawRequest(
  url: string,
  head: string,
  body: Iterable<string | Buffer> = [],
): Promise<{ status: number; body: string; reset: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const sock = connect(Number(port), hostname);
    let data = '';
    let reset = false;
    sock.on('data', (d: Buffer) => (data += d.toString('utf8')));
    sock.on('error', () => (reset = true));
    sock.on('close', () => {
      const [line = '', ...rest] = data.split('\r\n\r\n');
      resolve({ status: Number(line.split(' ')[1] ?? 0), body: rest.join('\r\n\r\n'), reset });
    });
    const pieces = body[Symbol.iterator]();
    const write = (): void => {
      for (;;) {
        const next = pieces.next();
        if (next.done) return;
        if (!sock.write(next.value)) return void sock.once('drain', write);
      }
    };
    sock.write(head, write);
  });
}
