import { Worker, type Job } from 'bullmq';
import type { Trajectory } from '../rollout/types.ts';
import { connectionOf } from './connection.ts';
import type { ReplayJobData, RolloutJobData } from './jobs.ts';
import { PolicyCache } from './policy-store.ts';
import { replayTrajectory, rolloutGroup, type GroupRollout } from './units.ts';

/**
 * The job processor of `sharp worker`: a rollout job rolls out the G trajectories of one question, a
 * replay job runs one trajectory's planned counterfactual replays (the trainer plans them and
 * assigns the credit). Every job is idempotent: a re-run (stalled job, retry, duplicate) recomputes
 * the same result from the same seed.
 */
export interface ServeOptions {
  redis: string;
  queue: string;
  concurrency: number;
  /** Lock of an active job; a worker silent this long (killed) has its job re-run by another. */
  lockMs: number;
  /** Called on job events (one line each, for the worker's log). */
  log?: (line: string) => void;
}

export interface Serving {
  worker: Worker;
  cache: PolicyCache;
  /** Jobs this process runs now (their locks are this worker's). */
  active: () => number;
  /**
   * Stops within a few seconds whatever Redis does: takes no new job, moves the jobs it holds back
   * to the queue (another worker runs them at once, instead of after their lock lapses), and closes
   * the connections without waiting for running jobs. Each step has its own deadline, so an
   * unreachable Redis delays it by seconds, not forever; a job that could not be moved back is
   * re-run elsewhere once its lock lapses (lockMs).
   */
  close: () => Promise<{ released: number; unreleased: number }>;
}

/** Deadlines of the steps of close (ms): pausing, moving held jobs back, closing the connections. */
const STOP_STEP_MS = { pause: 1000, release: 2000, close: 1500 };

/** `p` settled, or undefined after `ms` (or when it rejects): a stop that never hangs on Redis. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const late = new Promise<undefined>((res) => {
      timer = setTimeout(() => res(undefined), ms);
    });
    return await Promise.race([p.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

export function serveRollouts(o: ServeOptions): Serving {
  const cache = new PolicyCache();
  const log = o.log ?? (() => undefined);

  const rolloutJob = async (job: Job<RolloutJobData>): Promise<GroupRollout> => {
    const d = job.data;
    const { policy, release } = await cache.acquire(d.policy);
    try {
      return await rolloutGroup(policy, d.episode, d.rollout, d.seed);
    } finally {
      release();
    }
  };

  const replay = async (job: Job<ReplayJobData>): Promise<Trajectory[]> => {
    const d = job.data;
    const { policy, release } = await cache.acquire(d.policy);
    try {
      return await replayTrajectory(policy, d.traj, d.episode, d.replays, d.rollout, d.credit, d.seed);
    } finally {
      release();
    }
  };

  const held = new Map<string, { job: Job; token?: string }>();
  const worker = new Worker(
    o.queue,
    async (job: Job, token?: string) => {
      const key = `${job.id}:${token ?? ''}`;
      held.set(key, { job, token });
      try {
        return await (job.name === 'replay'
          ? replay(job as Job<ReplayJobData>)
          : rolloutJob(job as Job<RolloutJobData>));
      } finally {
        held.delete(key);
      }
    },
    {
      connection: connectionOf(o.redis, 'worker'),
      concurrency: o.concurrency,
      lockDuration: o.lockMs,
      stalledInterval: Math.max(500, Math.floor(o.lockMs / 2)),
      maxStalledCount: 3,
    },
  );
  let down = false;
  worker.on('error', (err) => {
    if (!down) log(`redis: ${err.message.split('\n')[0]} (reconnecting)`);
    down = true;
  });
  // The Worker's own 'ready' fires once; its backend's fires on every (re)connection.
  const onReady = (): void => {
    if (down) log('redis: reconnected');
    down = false;
  };
  worker.on('ready', onReady);
  (worker.getBackend() as unknown as { on: (e: 'ready', f: () => void) => void }).on('ready', onReady);
  worker.on('active', (job) => log(`start ${job.name} ${job.id}`));
  worker.on('completed', (job) => log(`done ${job.name} ${job.id}`));
  worker.on('failed', (job, err) => log(`failed ${job?.name} ${job?.id}: ${err.message.split('\n')[0]}`));
  return {
    worker,
    cache,
    active: () => held.size,
    close: async () => {
      await within(worker.pause(true), STOP_STEP_MS.pause);
      const jobs = [...held.values()];
      const moved = await Promise.all(
        jobs.map(({ job, token }) =>
          within(
            job.moveToWait(token).then(() => true),
            STOP_STEP_MS.release,
          ),
        ),
      );
      const released = moved.filter((m) => m === true).length;
      await within(worker.close(true), STOP_STEP_MS.close);
      // A job still running holds its policy; the process ends right after, which frees it.
      if (held.size === 0) await within(cache.dispose(), STOP_STEP_MS.close);
      return { released, unreleased: jobs.length - released };
    },
  };
}
