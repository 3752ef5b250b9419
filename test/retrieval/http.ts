import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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
