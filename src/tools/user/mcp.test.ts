import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { serveHttp } from '../../../test/fixtures/user-tools/mcp-server.ts';
import { startMcpServer } from './mcp.ts';
import type { StartedTools } from './module-tool.ts';

/** MCP servers through the official SDK: a real server (test/fixtures/user-tools/mcp-server.ts) over stdio and HTTP. */
type McpEntry = Parameters<typeof startMcpServer>[0];
const entry = (fields: Record<string, unknown>): McpEntry =>
  configSchema.parse({ rollout: { tools: [fields] } }).rollout.tools?.[0] as McpEntry;
const stdio = (mode = '') => ({
  command: process.execPath,
  args: ['--import', 'tsx', 'test/fixtures/user-tools/mcp-server.ts', 'stdio', ...(mode ? [mode] : [])],
});

const open: StartedTools[] = [];
const closers: (() => void)[] = [];
afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
  for (const c of closers) c();
});

describe('an MCP server over stdio', () => {
  it('lists its tools at start, keeps the allowed ones in allow order, and answers calls', async () => {
    const s = await startMcpServer(
      entry({ mcp: 'fx', ...stdio(), allow: ['pair', 'weather'], env: { FIXTURE_KEY: '${SHARP_TEST_KEY}' } }),
      { ...process.env, SHARP_TEST_KEY: 'k-123456' },
    );
    open.push(s);
    expect(s.tools.map((t) => [t.name, t.origin])).toEqual([
      ['pair', 'mcp server fx'],
      ['weather', 'mcp server fx'],
    ]);
    const [pair, weather] = s.tools;
    expect(pair!.check({ a: 1 })).toBe('missing argument "b"');
    expect(await pair!.run('{"a": 2, "b": 40}')).toEqual({ ok: true, output: '42' });
    // One string argument: the text itself; the env value reached the server, expanded.
    expect(await weather!.run('Oslo')).toEqual({ ok: true, output: 'Sunny in Oslo (key set)' });
  });
});

describe('a stdio server that exits', () => {
  it('fails the call that broke it, and is started again by the next call', async () => {
    const s = await startMcpServer(entry({ mcp: 'fx', ...stdio(), allow: ['crash', 'weather'], timeoutMs: 20_000 }));
    open.push(s);
    const [crash, weather] = s.tools;
    expect(await crash!.run('{}')).toMatchObject({ ok: false, output: expect.stringMatching(/^crash error: /) });
    expect(await weather!.run('Oslo')).toEqual({ ok: true, output: 'Sunny in Oslo (key unset)' });
    // Closed with the command: calls after that are errors, and nothing starts again.
    await s.close();
    expect(await weather!.run('Oslo')).toEqual({
      ok: false,
      output: 'weather error: mcp server fx is not available (the run ended)',
    });
  });
});

describe('an MCP server over streamable HTTP (loopback)', () => {
  it('sends the headers, ${ENV} expanded, and answers calls', async () => {
    const http = await serveHttp(['authorization', 'Bearer s3cret-token']);
    closers.push(() => http.server.close());
    const cfg = entry({ mcp: 'web', url: http.url, headers: { Authorization: 'Bearer ${SHARP_TEST_TOKEN}' } });
    // The config keeps the reference; only the started connection knows the value.
    expect(cfg.headers).toEqual({ Authorization: 'Bearer ${SHARP_TEST_TOKEN}' });
    const s = await startMcpServer(cfg, { SHARP_TEST_TOKEN: 's3cret-token' });
    open.push(s);
    expect(s.tools.map((t) => t.name)).toEqual(['weather', 'pair', 'slow', 'crash', 'lie', 'wrong']);
    expect(await s.tools[1]!.run('{"a": 1.5, "b": 2}')).toEqual({ ok: true, output: '3.5' });
  });

  it('a wrong token is a server that does not start, and the message does not quote the token', async () => {
    const http = await serveHttp(['authorization', 'Bearer right-token']);
    closers.push(() => http.server.close());
    const err = await startMcpServer(
      entry({
        mcp: 'web',
        url: http.url,
        headers: { Authorization: 'Bearer ${SHARP_TEST_TOKEN}' },
        startTimeoutMs: 5000,
      }),
      { SHARP_TEST_TOKEN: 'wrong-token' },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(/^rollout\.tools: mcp server web did not start: /);
    expect((err as Error).message).not.toContain('wrong-token');
  });
});

describe('servers that cannot serve are one line at start', () => {
  it('a server that exits at once', async () => {
    await expect(startMcpServer(entry({ mcp: 'dead', ...stdio('die') }))).rejects.toThrow(
      /^rollout\.tools: mcp server dead did not start: /,
    );
  });
  it('a server that never answers tools/list, within startTimeoutMs', async () => {
    const t0 = performance.now();
    await expect(startMcpServer(entry({ mcp: 'mute', ...stdio('mute'), startTimeoutMs: 1500 }))).rejects.toThrow(
      'rollout.tools: mcp server mute did not start: ',
    );
    expect(performance.now() - t0).toBeLessThan(6000);
  });
  it('an allowed tool the server does not offer', async () => {
    await expect(startMcpServer(entry({ mcp: 'fx', ...stdio(), allow: ['weather', 'browse'] }))).rejects.toThrow(
      "rollout.tools: mcp server fx has no tool 'browse' (allow); it offers: weather, pair, slow, crash, lie, wrong",
    );
  });
  it('an unset environment variable', async () => {
    await expect(
      startMcpServer(entry({ mcp: 'fx', ...stdio(), env: { KEY: '${SHARP_UNSET_VAR}' } }), {}),
    ).rejects.toThrow('rollout.tools: mcp server fx: environment variable SHARP_UNSET_VAR is not set');
  });
  it('nothing listening at the URL', async () => {
    await expect(
      startMcpServer(entry({ mcp: 'gone', url: 'http://127.0.0.1:9/mcp', startTimeoutMs: 3000 })),
    ).rejects.toThrow(/^rollout\.tools: mcp server gone did not start: /);
  });
});
