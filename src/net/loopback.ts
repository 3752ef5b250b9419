/**
 * Loopback addresses and the Host check of every server this program runs on loopback (the run
 * viewer, the retrieval server): below both, so neither imports the other.
 */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Whether a request with this Host header may reach a server that listens on loopback port `port`:
 * only a loopback name with that port (no port: 80). A page of another site that rebinds its DNS
 * name to 127.0.0.1 reaches the server under its own name, so its Host gives it away; a missing
 * Host is refused as well.
 */
export function loopbackHostAllowed(host: string | undefined, port: number): boolean {
  const m = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(host ?? '');
  if (!m) return false;
  return isLoopback((m[1] as string).toLowerCase()) && Number(m[2] ?? 80) === port;
}
