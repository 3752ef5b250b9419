import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isBlockedPort, listenPortProblem } from './ports.ts';

describe('ports', () => {
  it('refuses out-of-range ports and the ports fetch blocks, nothing else', () => {
    expect(listenPortProblem(-1)).toBe('-1 is not a port number (0-65535)');
    expect(listenPortProblem(70000)).toBe('70000 is not a port number (0-65535)');
    expect(listenPortProblem(1.5)).toMatch(/not a port number/);
    expect(listenPortProblem(6000)).toMatch(/^6000 is a port that fetch clients refuse/);
    for (const ok of [0, 80, 8000, 8080, 65535]) expect(listenPortProblem(ok)).toBeNull();
  });

  it('matches what Node fetch itself refuses', async () => {
    // A listener on a free port: fetch either connects (an allowed port) or says "bad port" before connecting.
    const reason = async (port: number): Promise<string> => {
      try {
        await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
        return 'ok';
      } catch (err) {
        return String((err as { cause?: Error }).cause?.message ?? (err as Error).message);
      }
    };
    for (const port of [6000, 10080, 22, 6697]) {
      expect(isBlockedPort(port)).toBe(true);
      expect(await reason(port)).toMatch(/bad port/);
    }
    const server = createServer((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    expect(isBlockedPort(port)).toBe(false);
    expect(await reason(port)).toBe('ok');
    server.close();
  });
});
