import { createRequire } from 'node:module';
import type { ConnectionOptions } from 'bullmq';

/**
 * ioredis options from a Redis URL (redis://[user:password@]host:port[/db]). Workers block on the
 * queue, which BullMQ requires to retry forever (maxRetriesPerRequest null); the trainer's client
 * fails a command fast instead, so its poll loop can tell "Redis is down" and keep trying until the
 * step's deadline. Both reconnect on their own (ioredis) with a delay capped at one second.
 */
export function connectionOf(url: string, role: 'worker' | 'trainer'): ConnectionOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`not a Redis URL: '${url}' (expected redis://host:port)`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new Error(`not a Redis URL: '${url}' (expected redis://host:port)`);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0)
    throw new Error(`Redis URL '${url}': database '${u.pathname.slice(1)}' is not a non-negative integer`);
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db,
    tls: u.protocol === 'rediss:' ? {} : undefined,
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    retryStrategy: (times: number) => Math.min(100 * times, 1000),
  };
}

/**
 * BullMQ talks to Redis through ioredis, an optional peer dependency it loads with require() at
 * connect time; without it every connection fails over and over with a long message. One line
 * instead, before anything connects; null when the client is there.
 */
export function missingRedisClient(): string | null {
  try {
    createRequire(import.meta.url).resolve('ioredis');
    return null;
  } catch {
    return "BullMQ's Redis client 'ioredis' is not installed (npm install ioredis)";
  }
}

/**
 * Resolves once a Redis PING at `url` answers; rejects after `timeoutMs` of failed tries with the
 * last reason. `sharp worker` checks this before it serves, so a wrong URL or a Redis that is down
 * is one line and exit 2 instead of a worker retrying in silence forever.
 */
export async function waitForRedis(url: string, timeoutMs: number): Promise<void> {
  const { Redis } = await import('ioredis');
  const base = connectionOf(url, 'trainer') as Record<string, unknown>;
  const t0 = Date.now();
  let last = 'no answer';
  for (;;) {
    const left = timeoutMs - (Date.now() - t0);
    const client = new Redis({
      ...base,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: Math.max(200, Math.min(5000, left)),
    });
    // The socket's error (ECONNREFUSED, ENOTFOUND, auth) says more than the rejected connect ("Connection is closed.").
    let socketError: string | undefined;
    client.on('error', (err: Error) => (socketError ??= err.message));
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch (err) {
      last = (socketError ?? String((err as Error).message ?? err)).split('\n')[0] ?? last;
      client.disconnect();
    }
    if (Date.now() - t0 >= timeoutMs)
      throw new Error(`Redis at ${url} unreachable for ${Math.round(timeoutMs / 1000)} s (${last})`);
    await new Promise((res) => setTimeout(res, Math.min(500, Math.max(0, timeoutMs - (Date.now() - t0)))));
  }
}
