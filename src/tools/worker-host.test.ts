/**
 * A tool call's answer must not depend on how long the tool's worker thread takes to start: on a
 * machine whose cores are shared with training jobs the start took over 30 s, the host gave up, and
 * the agent read "sandbox unavailable" where an idle machine gave the value, so the same seeded
 * rollout differed by the machine's load.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { WorkerHost } from './worker-host.ts';

/** Longer than the 30 s a start was once allowed (and once took here). */
const SLOW_START_MS = 31_000;

describe('WorkerHost start', () => {
  process.env.SLOW_START_MS = String(SLOW_START_MS); // a worker thread gets a copy of the environment when it starts
  const host = new WorkerHost<{ text: string }>({
    entry: new URL('../../test/tools/slow-start-worker.mjs', import.meta.url),
    errorPrefix: 'echo error',
    isolation: { kind: 'thread', resourceLimits: { stackSizeMb: 8 } },
  });
  afterAll(() => host.close());

  it(`a call made while the worker takes ${SLOW_START_MS / 1000} s to start gets the worker's answer`, async () => {
    const t0 = performance.now();
    const first = await host.run({ text: 'a' }, 5_000, 'echo error: timeout');
    expect(first).toEqual({ ok: true, output: 'echo a' });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(SLOW_START_MS);
    // The started worker serves the next call at once.
    expect(await host.run({ text: 'b' }, 5_000, 'echo error: timeout')).toEqual({ ok: true, output: 'echo b' });
    expect(host.started).toBe(1);
  }, 120_000);
});

describe('WorkerHost in a child process', () => {
  const host = new WorkerHost<{ text: string }>({
    entry: new URL('../../test/tools/fatal-alloc-worker.mjs', import.meta.url),
    errorPrefix: 'echo error',
    isolation: { kind: 'process', heapMb: 128 },
  });
  afterAll(() => host.close());

  it('answers a V8 fatal allocation error in the worker as a tool error; the host lives on and restarts it once', async () => {
    expect(await host.run({ text: 'a' }, 60_000, 'echo error: timeout')).toEqual({ ok: true, output: 'echo a' });
    // In a worker thread this allocation ends the host process itself.
    expect(await host.run({ text: 'grow' }, 60_000, 'echo error: timeout')).toEqual({
      ok: false,
      output: 'echo error: sandbox crashed: out of memory',
    });
    expect(await host.run({ text: 'b' }, 60_000, 'echo error: timeout')).toEqual({ ok: true, output: 'echo b' });
    expect(host.started).toBe(2);
  }, 120_000);

  it('says which file is missing when a worker entry was not built', async () => {
    const missing = new WorkerHost<{ text: string }>({
      entry: new URL('../../test/tools/no-such-worker.mjs', import.meta.url),
      errorPrefix: 'echo error',
      isolation: { kind: 'process', heapMb: 64 },
    });
    const r = await missing.run({ text: 'a' }, 1000, 'echo error: timeout');
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(
      /^echo error: sandbox unavailable: \/.*\/test\/tools\/no-such-worker\.mjs is missing \(run npm run build:tools\)$/,
    );
  });
});

describe('WorkerHost ready()', () => {
  const entry = new URL('../../test/tools/info-worker.mjs', import.meta.url);
  it('starts the worker with its argv and returns what its ready message said of it', async () => {
    const host = new WorkerHost<{ text: string }>({
      entry,
      errorPrefix: 'info error',
      isolation: { kind: 'process', heapMb: 64, args: ['a', 'b c'] },
    });
    try {
      expect(await host.ready()).toEqual({ args: ['a', 'b c'] });
      expect(await host.run({ text: 'x' }, 5_000, 'info error: timeout')).toEqual({ ok: true, output: 'echo x' });
      expect(host.started).toBe(1);
    } finally {
      await host.close();
    }
  });
  it('close() stops a worker that never finishes starting', async () => {
    const host = new WorkerHost<{ text: string }>({
      entry,
      errorPrefix: 'info error',
      isolation: { kind: 'process', heapMb: 64, args: ['hang'] },
    });
    const ready = host.ready().then(
      () => 'ready',
      (e: unknown) => `failed: ${(e as Error).message}`,
    );
    await new Promise((r) => setTimeout(r, 500));
    await host.close();
    expect(await ready).toMatch(/^failed: sandbox crashed: killed by SIGKILL while starting$/);
  });
});
