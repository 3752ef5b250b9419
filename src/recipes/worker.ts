/**
 * `sharp worker`: serves the rollout and replay jobs of distributed training runs until SIGINT or
 * SIGTERM. It first checks that Redis answers (for up to --connect-timeout-s, then one line and exit
 * 2); once serving, a lost connection is one line and its return another. A signal stops it within a
 * few seconds whatever Redis does: the jobs it holds go back to the queue (or, with Redis
 * unreachable, their locks lapse and another worker re-runs them); a second signal exits at once.
 * The policy of each job is read from the shared folder the job names (rollout.distributed.policyDir).
 * Flags: src/recipes/commands.ts.
 */
import { connectionOf, missingRedisClient, waitForRedis } from '../distributed/connection.ts';
import { serveRollouts } from '../distributed/worker.ts';
import { UserError } from '../errors.ts';
import { MAX_TIMER_S } from '../config/sections/bounds.ts';
import { MAX_WORKER_CONCURRENCY, type WorkerFlags } from './commands.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

/** After a stop signal the process ends within this long, even if closing hangs. */
const STOP_DEADLINE_MS = 10_000;

/** The flags, checked before anything connects or loads tensors. */
export function checkWorkerFlags(o: WorkerFlags): WorkerFlags {
  const missing = missingRedisClient();
  if (missing) throw new UserError(`worker: ${missing}`);
  try {
    connectionOf(o.redis, 'worker');
  } catch (err) {
    throw new UserError(`worker --redis: ${(err as Error).message}`);
  }
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1 || o.concurrency > MAX_WORKER_CONCURRENCY) {
    throw new UserError(
      `worker --concurrency: ${o.concurrency} is not an integer in 1..${MAX_WORKER_CONCURRENCY} (jobs at once in one ` +
        `process: each holds its rollouts in memory)`,
    );
  }
  // The lock is renewed on a timer of lockS x 1000 ms, which Node fires at once past 2^31 - 1 ms.
  if (!(o.lockS > 0 && o.lockS <= MAX_TIMER_S))
    throw new UserError(`worker --lock-s: ${o.lockS} is not a number of seconds in (0, ${MAX_TIMER_S}]`);
  if (!(o.connectTimeoutS > 0 && o.connectTimeoutS <= 86_400))
    throw new UserError(`worker --connect-timeout-s: ${o.connectTimeoutS} is not a number of seconds in (0, 86400]`);
  return o;
}

export async function run(
  opts: WorkerFlags,
  print: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<void> {
  const o = checkWorkerFlags(opts);
  try {
    await waitForRedis(o.redis, o.connectTimeoutS * 1000);
  } catch (err) {
    throw new UserError(`worker: ${(err as Error).message} (is it running? wait longer with --connect-timeout-s)`);
  }
  // No config file: the schema defaults (run.backend, run.threads) under SHARP_BACKEND and --backend,
  // with the native kernels on wasm like the trainer, so a worker's rollouts are the trainer's.
  await withRun({ cfg: configFrom({}), backendFlag: o.backend }, async ({ backend }) => {
    const tag = `worker ${process.pid}`;
    const serving = serveRollouts({
      redis: o.redis,
      queue: o.queue,
      concurrency: o.concurrency,
      lockMs: Math.round(o.lockS * 1000),
      log: (l) => print(`${tag}: ${l}`),
    });
    print(
      `${tag}: serving queue '${o.queue}' on ${o.redis} (concurrency ${o.concurrency}, ${backend.backend} backend)`,
    );
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
    const lapse =
      r.unreleased > 0 ? `, ${r.unreleased} left to lapse after --lock-s ${o.lockS} (Redis unreachable)` : '';
    print(`${tag}: stopped (${r.released} held job(s) back in the queue${lapse})`);
  });
  // A job's rollout still computing would keep the event loop alive: its result is not wanted now.
  setTimeout(() => process.exit(process.exitCode ?? 0), 500).unref();
}
