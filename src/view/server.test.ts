import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFailure, publicMessage, resolveInside, startViewServer, type ViewServer } from './server.ts';

/**
 * The server's guarantees checked with raw HTTP (a TCP socket writing the request line as given, so
 * no client normalises `..` away): only files of the run folder, only GET/HEAD, loopback Host only.
 */
let base: string;
let run: string;
let server: ViewServer;
const SECRET = 'secret-outside-the-run-folder';

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'sharp-view-server-'));
  run = join(base, 'run');
  mkdirSync(join(run, 'plots'), { recursive: true });
  writeFileSync(join(run, 'metrics.jsonl'), '{"step":1,"accuracy":0.5}\n');
  writeFileSync(join(run, 'page.html'), '<script>alert(1)</script>');
  writeFileSync(join(base, 'secret.txt'), SECRET);
  symlinkSync(join(base, 'secret.txt'), join(run, 'link-out.txt'));
  symlinkSync(base, join(run, 'plots', 'up'));
  server = await startViewServer({
    root: run,
    host: '127.0.0.1',
    port: 0,
    script: 'console.log(1)',
    index: async () => ({ version: 1, title: 'run', facts: [], charts: [], steps: [] }),
    step: async (name) => (name === 'step-000001' ? { step: 1 } : undefined),
  });
});
afterAll(async () => {
  await server?.close();
  rmSync(base, { recursive: true, force: true });
});

function raw(request: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((res, rej) => {
    const sock = connect(server.port, '127.0.0.1');
    let data = '';
    sock.on('data', (d: Buffer) => (data += d.toString('utf8')));
    sock.on('error', rej);
    sock.on('end', () => {
      const [head = '', ...rest] = data.split('\r\n\r\n');
      res({ status: Number(head.split(' ')[1]), headers: head, body: rest.join('\r\n\r\n') });
    });
    sock.write(request);
  });
}
const get = (path: string, host = `127.0.0.1:${server.port}`) =>
  raw(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);

describe('sharp view server', () => {
  it('binds loopback and serves the page, the index, steps and run files', async () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.headers).toMatch(/Content-Security-Policy: default-src 'none'; script-src 'self';/);
    expect(page.body).toContain('<script src="app.js"></script>');
    expect((await get('/app.js')).body).toBe('console.log(1)');
    expect(JSON.parse((await get('/api/index.json')).body)).toMatchObject({ title: 'run' });
    expect(JSON.parse((await get('/api/steps/step-000001')).body)).toEqual({ step: 1 });
    expect((await get('/api/steps/step-000002')).status).toBe(404);
    expect((await get('/api/steps/..%2f..%2fsecret')).status).toBe(404);
    const m = await get('/files/metrics.jsonl');
    expect(m.status).toBe(200);
    expect(m.body).toBe('{"step":1,"accuracy":0.5}\n');
  });

  it('refuses every path out of the run folder', async () => {
    for (const p of [
      '/files/../secret.txt',
      '/files/../../../../etc/passwd',
      '/files/%2e%2e/secret.txt',
      '/files/..%2fsecret.txt',
      '/files/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd',
      '/files/plots/../../secret.txt',
      '/files//etc/passwd',
      '/files/%2fetc%2fpasswd',
      '/files/link-out.txt',
      '/files/plots/up/secret.txt',
      '/files/..%5csecret.txt',
      '/files/metrics.jsonl%00.png',
      '/files/%E0%A4%A',
    ]) {
      const r = await get(p);
      expect(r.status, p).toBe(403);
      expect(r.body, p).not.toContain(SECRET);
      expect(r.body, p).not.toContain('root:');
    }
    expect((await get('/../secret.txt')).status).toBe(404);
    expect((await get('/files/missing.txt')).status).toBe(404);
    expect((await get('/files/plots')).status).toBe(404);
  });

  it('serves run files as inert content (no HTML of this origin)', async () => {
    const r = await get('/files/page.html');
    expect(r.status).toBe(200);
    expect(r.headers).toMatch(/Content-Type: application\/octet-stream/);
    expect(r.headers).toMatch(/Content-Security-Policy: sandbox/);
    expect(r.headers).toMatch(/X-Content-Type-Options: nosniff/);
  });

  it('answers only GET and HEAD, and only to a loopback Host', async () => {
    expect(
      (await raw(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)).status,
    ).toBe(405);
    const head = await raw(
      `HEAD /files/metrics.jsonl HTTP/1.1\r\nHost: localhost:${server.port}\r\nConnection: close\r\n\r\n`,
    );
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    // A DNS-rebinding page reaches 127.0.0.1 under its own name: refused.
    const rebind = await get('/api/index.json', `evil.example:${server.port}`);
    expect(rebind.status).toBe(403);
    expect(rebind.body).toBe('forbidden host\n');
  });

  it('answers a very long path with 414 and no file system path, and keeps serving', async () => {
    for (const p of [`/files/${'a'.repeat(8192)}`, `/files/${'abc/'.repeat(1200)}x`, `/${'x'.repeat(5000)}`]) {
      const r = await get(p);
      expect(r.status).toBe(414);
      expect(r.body).toBe('URI too long\n');
      expect(r.body).not.toContain(base);
    }
    // Under the cap, a name the system cannot take (a component over 255 bytes) is a plain 404.
    const long = await get(`/files/${'b'.repeat(1500)}`);
    expect([long.status, long.body]).toEqual([404, 'not found\n']);
    expect((await get('/files/metrics.jsonl')).status).toBe(200);
  });

  it('publicMessage keeps the reason and leaves the server paths out', () => {
    const sys = Object.assign(new Error(`ENAMETOOLONG: name too long, open '${run}/x'`), { code: 'ENAMETOOLONG' });
    expect(publicMessage(sys, run)).toBe('ENAMETOOLONG');
    expect(publicMessage(new Error(`${run}/metrics.jsonl: not a regular file`), run)).toBe(
      'metrics.jsonl: not a regular file',
    );
    expect(publicMessage(new Error(`cannot read /etc/sharp/x.json (bad)`), run)).toBe('cannot read <path> (bad)');
  });

  it('resolveInside maps names inside the folder and nothing else', () => {
    expect(resolveInside(run, 'plots/../metrics.jsonl')).toBe(join(run, 'metrics.jsonl'));
    expect(resolveInside(run, 'new/file.txt')).toBe(join(run, 'new/file.txt'));
    expect(resolveInside(run, '../run-other/x')).toBeNull();
    expect(resolveInside(run, '')).toBeNull();
  });

  it('maps open errors to 403 / 404 / 500 and never throws', () => {
    const e = (code: string): NodeJS.ErrnoException => Object.assign(new Error(`${code}: x`), { code });
    expect(openFailure(e('EACCES'))).toEqual([403, 'forbidden: the server may not read this file']);
    expect(openFailure(e('EPERM'))).toEqual([403, 'forbidden: the server may not read this file']);
    expect(openFailure(e('ENOENT'))).toEqual([404, 'not found']);
    expect(openFailure(e('ENOTDIR'))).toEqual([404, 'not found']);
    expect(openFailure(e('ENAMETOOLONG'))).toEqual([404, 'not found']);
    // The system's message names the absolute path: only its code is sent.
    expect(openFailure(e('EMFILE'))).toEqual([500, 'error: EMFILE']);
  });

  it('stays up while a file flaps (removed and written again between requests), each answer whole', async () => {
    // A live run replaces its files by rename and deletes old ones: every answer is a 200 with the
    // whole of one version, or a 404, and the server keeps answering.
    const file = join(run, 'flap.txt');
    const versions = ['a'.repeat(200_000), 'b'.repeat(100_000)];
    let stop = false;
    let flips = 0;
    const flapper = (async () => {
      while (!stop) {
        const v = versions[flips % 2] as string;
        writeFileSync(`${file}.tmp`, v);
        renameSync(`${file}.tmp`, file);
        await new Promise((r) => setImmediate(r));
        unlinkSync(file);
        flips++;
        await new Promise((r) => setImmediate(r));
      }
    })();
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const r = await get('/files/flap.txt');
      seen.add(r.status);
      expect([200, 404], r.headers).toContain(r.status);
      if (r.status === 200) expect(versions, r.headers).toContain(r.body);
    }
    stop = true;
    await flapper;
    expect(flips).toBeGreaterThan(10);
    expect(seen.has(404) || seen.has(200)).toBe(true);
    expect((await get('/files/metrics.jsonl')).body).toBe('{"step":1,"accuracy":0.5}\n');
  });

  it('serves an empty file as an empty 200', async () => {
    writeFileSync(join(run, 'empty.txt'), '');
    const r = await get('/files/empty.txt');
    expect(r.status).toBe(200);
    expect(r.headers).toMatch(/Content-Length: 0/);
    expect(r.body).toBe('');
  });
});
