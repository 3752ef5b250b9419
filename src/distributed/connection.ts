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
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error(`not a Redis URL: '${url}' (expected redis://host:port)`);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new Error(`Redis URL '${url}': database '${u.pathname.slice(1)}' is not a non-negative integer`);
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
