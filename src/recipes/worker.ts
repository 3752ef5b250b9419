import { resolveBackendName } from '../backend/gpu-check.ts';
import { initBackend } from '../backend/select.ts';
import { connectionOf, missingRedisClient } from '../distributed/connection.ts';
import { serveRollouts } from '../distributed/worker.ts';
import { UserError } from '../errors.ts';
import { closeCalculateWorker } from '../tools/calculate.ts';
import { closeCodeSandbox } from '../tools/code.ts';

/**
 * `sharp worker`: serves the rollout and replay jobs of distributed training runs until SIGINT or
 * SIGTERM (finishes nothing half: an unfinished job's lock lapses and another worker re-runs it).
 * The policy of each job is read from the shared folder the job names (rollout.distributed.policyDir).
 */
export interface WorkerOptions {
  redis: string;
  queue: string;
  concurrency: number;
  backend?: string;
  lockS: number;
  print: (line: string) => void;
}

export async function workerRecipe(o: WorkerOptions): Promise<void> {
  const missing = missingRedisClient();
  if (missing) throw new UserError(`worker: ${missing}`);
  try {
    connectionOf(o.redis, 'worker');
  } catch (err) {
    throw new UserError(`worker --redis: ${(err as Error).message}`);
  }
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new UserError(`worker --concurrency: ${o.concurrency} is not a positive integer`);
  if (!(o.lockS > 0)) throw new UserError(`worker --lock-s: ${o.lockS} is not a positive number`);
  let name;
  try {
    name = resolveBackendName(o.backend, 'auto');
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  const backend = await initBackend(name); // a BackendError is already one line (UserError)
  const serving = serveRollouts({ redis: o.redis, queue: o.queue, concurrency: o.concurrency, lockMs: Math.round(o.lockS * 1000), log: (l) => o.print(`worker ${process.pid}: ${l}`) });
  o.print(`worker ${process.pid}: serving queue '${o.queue}' on ${o.redis} (concurrency ${o.concurrency}, ${backend.backend} backend)`);
  await new Promise<void>((res) => {
    const done = (): void => res();
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  o.print(`worker ${process.pid}: stopping`);
  await serving.close();
  await closeCodeSandbox();
  await closeCalculateWorker();
}
