import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingRedisClient } from '../../src/distributed/connection.ts';

/**
 * A real redis-server for the distributed tests, on a free loopback port, with its data in a temp
 * folder (append-only file, so a restart keeps the queue as a production Redis with persistence
 * does). Tests skip with a clear message when the binary is absent (.ci/run installs it).
 */
const REDIS_BIN = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';
const clientMissing = missingRedisClient();
/** Both the server binary and BullMQ's client library (ioredis, an optional peer dependency of bullmq). */
export const HAVE_REDIS = existsSync(REDIS_BIN) && clientMissing === null;
export const NO_REDIS_MESSAGE = existsSync(REDIS_BIN)
  ? `${clientMissing}: distributed tests with Redis skipped`
  : `redis-server not found at ${REDIS_BIN} (apt-get install redis-server, or set REDIS_SERVER): distributed ` +
    `tests with Redis skipped`;

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? res(addr.port) : rej(new Error('no port'))));
    });
  });
}

const accepting = (port: number): Promise<boolean> =>
  new Promise((res) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      res(true);
    });
    s.once('error', () => res(false));
  });

export interface RedisServer {
  url: string;
  port: number;
  /** Stops the server (SIGTERM: it writes its append-only file) and waits for its exit. */
  stop: () => Promise<void>;
  /** Starts it again on the same port and folder. */
  start: () => Promise<void>;
  /** stop, then start: the whole data set must come back from disk. */
  restart: () => Promise<void>;
  /** stop and remove the data folder. */
  dispose: () => Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sharp-redis-'));
  let proc: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    proc = spawn(
      REDIS_BIN,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--protected-mode',
        'no',
      ],
      { stdio: 'ignore' },
    );
    const t0 = Date.now();
    while (!(await accepting(port))) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode} (port ${port})`);
      if (Date.now() - t0 > 10_000) throw new Error(`redis-server did not listen on ${port} within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async (): Promise<void> => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((res) => {
      p.once('exit', () => res());
      p.kill('SIGTERM');
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    start,
    restart: async () => {
      await stop();
      await start();
    },
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
