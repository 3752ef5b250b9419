import { Queue } from 'bullmq';
import type { Config } from '../config/schema.ts';
import { UserError } from '../errors.ts';
import { connectionOf, missingRedisClient } from './connection.ts';
import type { JobName } from './jobs.ts';

/**
 * The trainer's side of the queue: enqueue a stage's jobs under their deterministic ids and poll
 * until every one has completed, re-adding any that Redis no longer knows (a restart without
 * persistence) and re-attaching to those that exist (a resumed trainer).
 */
type DistributedConfig = Config['rollout']['distributed'];

export interface QueueSetup {
  dist: DistributedConfig;
  /** One progress line per change (default: stderr). */
  progress?: (line: string) => void;
  pollMs?: number;
}

export interface JobQueue {
  /** Runs the jobs of one stage of step `step`; results in job order. */
  run<R>(name: JobName, step: number, jobs: readonly { id: string; data: unknown }[]): Promise<R[]>;
  /** The last call: jobs, seconds from enqueue to the last result (for the bench). */
  readonly last: { jobs: number; seconds: number };
  close: () => Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A poll round bounded in time. BullMQ's client waits for Redis' 'ready' without a limit (ioredis
 * reconnects forever), so a round against a Redis that never answers would never return and the
 * step's deadline would never be checked; a round that is too slow counts as Redis unreachable.
 * Every command of a round is idempotent, so a late one finishing after the next round began is harmless.
 */
async function bounded<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, rej) => (timer = setTimeout(() => rej(new Error(`no answer within ${(ms / 1000).toFixed(1)} s`)), ms)),
  );
  work.catch(() => undefined); // a round given up on may still fail later: nobody waits for it
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
const ROUND_MS = 5000;
const firstLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0] as string;

export function jobQueue(setup: QueueSetup): JobQueue {
  const d = setup.dist;
  const missing = missingRedisClient();
  if (missing) throw new UserError(`rollout.distributed.redis is set, but ${missing}`);
  let connection;
  try {
    connection = connectionOf(d.redis, 'trainer');
  } catch (err) {
    throw new UserError(`rollout.distributed.redis: ${firstLine(err)}`);
  }
  const queue = new Queue(d.queue, { connection });
  let lastRedisError = '';
  queue.on('error', (err) => (lastRedisError = firstLine(err)));
  const progress = setup.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const pollMs = setup.pollMs ?? 50;
  const last = { jobs: 0, seconds: 0 };

  const run = async <R>(name: JobName, step: number, jobs: readonly { id: string; data: unknown }[]): Promise<R[]> => {
    const ctx = { step };
    const t0 = performance.now();
    const deadline = t0 + d.jobTimeoutS * 1000;
    const results = new Map<string, R>();
    let downSince: number | undefined;
    let shown = '';
    // One look at every unfinished job: add the unknown ones (first time, or lost by Redis), collect the finished.
    const pollRound = async (): Promise<void> => {
      for (const j of jobs) {
        if (results.has(j.id)) continue;
        const state = await queue.getJobState(j.id);
        if (state === 'unknown') {
          await queue.add(name, j.data, {
            jobId: j.id,
            attempts: d.retries + 1,
            backoff: { type: 'fixed', delay: 500 },
          });
        } else if (state === 'completed' || state === 'failed') {
          const job = await queue.getJob(j.id);
          if (!job) continue; // removed between the two calls: re-added next round
          if (state === 'failed')
            throw new UserError(
              `rollout.distributed: step ${ctx.step}: job ${j.id} failed after ${job.attemptsMade} attempt(s): ` +
                `${firstLine(job.failedReason)}`,
            );
          results.set(j.id, job.returnvalue as R);
        }
      }
    };
    while (results.size < jobs.length) {
      const roundStart = performance.now();
      try {
        await bounded(Math.max(250, Math.min(ROUND_MS, deadline - performance.now())), pollRound());
        if (downSince !== undefined)
          progress(
            `rollout step ${ctx.step}: redis reconnected after ` +
              `${((performance.now() - downSince) / 1000).toFixed(1)} s`,
          );
        downSince = undefined;
        lastRedisError = '';
      } catch (err) {
        if (err instanceof UserError) throw err;
        lastRedisError ||= firstLine(err); // the client's own error (e.g. ECONNREFUSED) names the cause better
        if (downSince === undefined)
          progress(
            `rollout step ${ctx.step}: redis unreachable (${lastRedisError}); retrying until ` +
              `rollout.distributed.jobTimeoutS`,
          );
        downSince ??= roundStart;
      }
      const line = `${name} step ${ctx.step}: ${results.size}/${jobs.length} jobs done`;
      if (line !== shown) progress((shown = line));
      if (results.size === jobs.length) break;
      if (performance.now() > deadline) {
        if (downSince !== undefined)
          throw new UserError(
            `rollout.distributed: step ${ctx.step}: Redis at ${d.redis} unreachable for ` +
              `${((performance.now() - downSince) / 1000).toFixed(0)} s (${lastRedisError})`,
          );
        throw new UserError(
          `rollout.distributed: step ${ctx.step}: ${results.size}/${jobs.length} ${name} jobs done after ` +
            `rollout.distributed.jobTimeoutS=${d.jobTimeoutS} s (is a worker serving queue '${d.queue}'? sharp ` +
            `worker --redis ${d.redis})`,
        );
      }
      await sleep(pollMs);
    }
    const seconds = (performance.now() - t0) / 1000;
    Object.assign(last, { jobs: jobs.length, seconds });
    return jobs.map((j) => results.get(j.id) as R);
  };
  return { run, last, close: () => queue.close() };
}
