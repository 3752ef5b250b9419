import { connectionOf, missingRedisClient, waitForRedis } from '../distributed/connection.ts';
import { serveRollouts } from '../distributed/worker.ts';
import { UserError } from '../errors.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

/**
 * `sharp worker`: serves the rollout and replay jobs of distributed training runs until SIGINT or
 * SIGTERM. It first checks that Redis answers (for up to --connect-timeout-s, then one line and exit
 * 2); once serving, a lost connection is one line and its return another. A signal stops it within a
 * few seconds whatever Redis does: the jobs it holds go back to the queue (or, with Redis
 * unreachable, their locks lapse and another worker re-runs them); a second signal exits at once.
 * The policy of each job is read from the shared folder the job names (rollout.distributed.policyDir).
 *
 * Flags (camelCased by commander): --redis URL (required)  --queue NAME (sharp-rollout)
 *   --concurrency N (1)  --lock-s S (30)  --connect-timeout-s S (30)  --backend auto|tensorflow|wasm|cpu
 */
export interface WorkerOptions {
  redis: string;
  queue: string;
  concurrency: number;
  backend?: string;
  lockS: number;
  /** Seconds Redis may be unreachable at start before the worker gives up (exit 2). */
  connectTimeoutS: number;
}

/** After a stop signal the process ends within this long, even if closing hangs. */
const STOP_DEADLINE_MS = 10_000;

/** The flags with their defaults, checked before anything connects or loads tensors. */
export function workerOptions(opts: Record<string, unknown>): WorkerOptions {
  const o: WorkerOptions = {
    redis: String(opts.redis),
    queue: typeof opts.queue === 'string' ? opts.queue : 'sharp-rollout',
    concurrency: typeof opts.concurrency === 'number' ? opts.concurrency : 1,
    backend: typeof opts.backend === 'string' ? opts.backend : undefined,
    lockS: typeof opts.lockS === 'number' ? opts.lockS : 30,
    connectTimeoutS: typeof opts.connectTimeoutS === 'number' ? opts.connectTimeoutS : 30,
  };
  const missing = missingRedisClient();
  if (missing) throw new UserError(`worker: ${missing}`);
  try {
    connectionOf(o.redis, 'worker');
  } catch (err) {
    throw new UserError(`worker --redis: ${(err as Error).message}`);
  }
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new UserError(`worker --concurrency: ${o.concurrency} is not a positive integer`);
  if (!(o.lockS > 0)) throw new UserError(`worker --lock-s: ${o.lockS} is not a positive number`);
  if (!(o.connectTimeoutS > 0 && o.connectTimeoutS <= 86_400)) throw new UserError(`worker --connect-timeout-s: ${o.connectTimeoutS} is not a number of seconds in (0, 86400]`);
  return o;
}

export async function run(opts: Record<string, unknown>, print: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<void> {
  const o = workerOptions(opts);
  try {
    await waitForRedis(o.redis, o.connectTimeoutS * 1000);
  } catch (err) {
    throw new UserError(`worker: ${(err as Error).message} (is it running? wait longer with --connect-timeout-s)`);
  }
  // No config file: the schema defaults (run.backend, run.threads) under SHARP_BACKEND and --backend,
  // with the native kernels on wasm like the trainer, so a worker's rollouts are the trainer's.
  await withRun({ cfg: configFrom({}), backendFlag: o.backend }, async ({ backend }) => {
    const tag = `worker ${process.pid}`;
    const serving = serveRollouts({ redis: o.redis, queue: o.queue, concurrency: o.concurrency, lockMs: Math.round(o.lockS * 1000), log: (l) => print(`${tag}: ${l}`) });
    print(`${tag}: serving queue '${o.queue}' on ${o.redis} (concurrency ${o.concurrency}, ${backend.backend} backend)`);
    const signal = await new Promise<NodeJS.Signals>((res) => {
      const on = (sig: NodeJS.Signals): void => {
        process.off('SIGINT', on);
        process.off('SIGTERM', on);
        res(sig);
      };
      process.on('SIGINT', on);
      process.on('SIGTERM', on);
    });
    const now = (sig: NodeJS.Signals): void => {
      print(`${tag}: ${sig} again: exiting now`);
      process.exit(sig === 'SIGINT' ? 130 : 143);
    };
    process.once('SIGINT', now);
    process.once('SIGTERM', now);
    // Whatever hangs (a job's compute, a socket), the process ends within the deadline.
    setTimeout(() => {
      print(`${tag}: not stopped within ${STOP_DEADLINE_MS / 1000} s: exiting`);
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
    print(`${tag}: stopping (${signal}; ${serving.active()} job(s) held)`);
    const r = await serving.close();
    const lapse = r.unreleased > 0 ? `, ${r.unreleased} left to lapse after --lock-s ${o.lockS} (Redis unreachable)` : '';
    print(`${tag}: stopped (${r.released} held job(s) back in the queue${lapse})`);
  });
  // A job's rollout still computing would keep the event loop alive: its result is not wanted now.
  setTimeout(() => process.exit(process.exitCode ?? 0), 500).unref();
}
