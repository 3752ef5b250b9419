import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { microConfig, sharp } from '../cli-helpers.ts';
import { HAVE_REDIS, NO_REDIS_MESSAGE, startRedis, type RedisServer } from '../distributed/redis.ts';
import { spawnWorker, type WorkerProcess } from '../distributed/workers.ts';

/**
 * `sharp worker` (the real binary, a real redis-server) under signals and a Redis that goes away:
 * it says when the connection is lost and when it is back, and SIGTERM or SIGINT end it within a
 * few seconds whether Redis is up or down, with the job it held back in the queue for another worker.
 */
if (!HAVE_REDIS) console.warn(NO_REDIS_MESSAGE);

/** Ends within a few seconds of a signal: the budget allows for a loaded 2-core machine. */
const STOP_MS = 8_000;

describe.skipIf(!HAVE_REDIS)('sharp worker: signals and lost connections', () => {
  let root: string;
  let redis: RedisServer;
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'sharp-worker-faults-'));
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const w of workers) if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill('SIGKILL');
    await redis?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  const start = (queue: string, extra: string[] = []): WorkerProcess => {
    const w = spawnWorker(redis.url, queue, extra);
    workers.push(w);
    return w;
  };
  /** Sends `sig` and resolves with the exit code and how long the exit took. */
  const signal = (w: WorkerProcess, sig: NodeJS.Signals): Promise<{ code: number | null; ms: number }> =>
    new Promise((res) => {
      const t0 = Date.now();
      w.proc.once('exit', (code) => res({ code, ms: Date.now() - t0 }));
      w.proc.kill(sig);
    });

  it('prints the lost connection and the reconnection, and SIGTERM exits promptly after', async () => {
    const w = start('reconnect');
    await w.waitFor(/serving queue 'reconnect'/);
    await redis.stop();
    await w.waitFor(/: redis: .* \(reconnecting\)$/, 30_000);
    await redis.start();
    await w.waitFor(/: redis: reconnected$/, 30_000);
    const r = await signal(w, 'SIGTERM');
    expect(r.code).toBe(0);
    expect(r.ms).toBeLessThan(STOP_MS);
    expect(w.lines.filter((l) => / redis: reconnected$/.test(l))).toHaveLength(1);
    expect(w.lines.at(-1)).toBe(`worker ${w.proc.pid}: stopped (0 held job(s) back in the queue)`);
  }, 180_000);

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'with Redis down, %s still ends the worker within seconds',
    async (sig) => {
      const w = start(`down-${sig}`);
      await w.waitFor(/serving queue/);
      await redis.stop();
      try {
        await w.waitFor(/\(reconnecting\)$/, 30_000);
        const r = await signal(w, sig);
        expect(r.code).toBe(0);
        expect(r.ms).toBeLessThan(STOP_MS);
        expect(w.lines).toContain(`worker ${w.proc.pid}: stopping (${sig}; 0 job(s) held)`);
      } finally {
        await redis.start();
      }
    },
    180_000,
  );

  it('SIGTERM mid-job puts the held job back in the queue; another worker finishes the run', async () => {
    const a = start('held', ['--lock-s', '60']);
    await a.waitFor(/serving queue 'held'/);
    const cfg = microConfig(root, 'held', 2);
    const train = sharp(root, [
      'train',
      '--config',
      cfg,
      '--set',
      `rollout.distributed.redis=${redis.url}`,
      '--set',
      'rollout.distributed.queue=held',
      '--set',
      'rollout.distributed.jobTimeoutS=300',
    ]);
    const line = await a.waitFor(/start rollout \S+/, 300_000);
    const id = /start rollout (\S+)/.exec(line)?.[1] as string;
    const r = await signal(a, 'SIGTERM');
    expect(r.code).toBe(0);
    expect(r.ms).toBeLessThan(STOP_MS);
    expect(a.lines.at(-1)).toBe(`worker ${a.proc.pid}: stopped (1 held job(s) back in the queue)`);
    // Back in the queue at once, not after the 60 s lock: no worker holds it.
    const queue = new Queue('held', { connection: { host: '127.0.0.1', port: redis.port } });
    expect(['waiting', 'prioritized']).toContain(await queue.getJobState(id));
    await queue.close();
    const b = start('held');
    const done = await train;
    expect(done.code, done.stderr).toBe(0);
    expect(b.lines).toContain(`worker ${b.proc.pid}: done rollout ${id}`);
    await b.stop();
  }, 600_000);
});
