import { connectionOf, missingRedisClient } from '../distributed/connection.ts';
import { serveRollouts } from '../distributed/worker.ts';
import { UserError } from '../errors.ts';
import { configFrom, withRun } from './setup.ts';

/**
 * `sharp worker`: serves the rollout and replay jobs of distributed training runs until SIGINT or
 * SIGTERM (finishes nothing half: an unfinished job's lock lapses and another worker re-runs it).
 * The policy of each job is read from the shared folder the job names (rollout.distributed.policyDir).
 *
 * Flags (camelCased by commander): --redis URL (required)  --queue NAME (sharp-rollout)
 *   --concurrency N (1)  --lock-s S (30)  --backend auto|tensorflow|wasm|cpu
 */
export interface WorkerOptions {
  redis: string;
  queue: string;
  concurrency: number;
  backend?: string;
  lockS: number;
}

/** The flags with their defaults, checked before anything connects or loads tensors. */
export function workerOptions(opts: Record<string, unknown>): WorkerOptions {
  const o: WorkerOptions = {
    redis: String(opts.redis),
    queue: typeof opts.queue === 'string' ? opts.queue : 'sharp-rollout',
    concurrency: typeof opts.concurrency === 'number' ? opts.concurrency : 1,
    backend: typeof opts.backend === 'string' ? opts.backend : undefined,
    lockS: typeof opts.lockS === 'number' ? opts.lockS : 30,
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
  return o;
}

export async function run(opts: Record<string, unknown>, print: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<void> {
  const o = workerOptions(opts);
  // No config file: the schema defaults (run.backend, run.threads) under SHARP_BACKEND and --backend,
  // with the native kernels on wasm like the trainer, so a worker's rollouts are the trainer's.
  await withRun({ cfg: configFrom({}), backendFlag: o.backend }, async ({ backend }) => {
    const tag = `worker ${process.pid}`;
    const serving = serveRollouts({ redis: o.redis, queue: o.queue, concurrency: o.concurrency, lockMs: Math.round(o.lockS * 1000), log: (l) => print(`${tag}: ${l}`) });
    print(`${tag}: serving queue '${o.queue}' on ${o.redis} (concurrency ${o.concurrency}, ${backend.backend} backend)`);
    await new Promise<void>((res) => {
      const done = (): void => res();
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    });
    print(`${tag}: stopping`);
    await serving.close();
  });
}
