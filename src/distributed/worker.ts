import { Queue, WaitingChildrenError, Worker, type Job } from 'bullmq';
import type { Trajectory } from '../rollout/types.ts';
import { connectionOf } from './connection.ts';
import { replayJobId, replaySeed } from './ids.ts';
import type { GroupJobData, ReplayJobData } from './jobs.ts';
import { PolicyCache } from './policy-store.ts';
import { creditGroup, planReplays, replayTrajectory, rolloutGroup, type GroupOutcome } from './units.ts';

/**
 * The job processor of `sharp worker`. A group job runs in two passes (BullMQ's parent/child flow,
 * children added by the parent): the rollout of its G trajectories, after which each trajectory's
 * counterfactual replays become a child job and the parent waits for them; then, once every child
 * is done, the credit from their results. Every step is idempotent: a re-run (stalled job, retry,
 * duplicate) recomputes the same rollout from the same seed and re-adds children under the same ids,
 * which BullMQ ignores when they exist.
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
  const children = new Queue(o.queue, { connection: connectionOf(o.redis, 'worker') });
  const log = o.log ?? (() => undefined);
  children.on('error', () => undefined); // the worker's own 'error' handler reports connection trouble once

  const group = async (job: Job<GroupJobData>, token: string | undefined): Promise<GroupOutcome> => {
    const d = job.data;
    const { policy, release } = await cache.acquire(d.policy);
    try {
      let rolled = d.rolled;
      if (!rolled) {
        rolled = await rolloutGroup(policy, d.episode, d.rollout, d.seed);
        const plan = await planReplays(rolled.trajectories, d.episode, d.credit, d.seed);
        const id = job.id as string;
        for (const [t, replays] of plan.entries()) {
          if (replays.length === 0) continue;
          const traj = rolled.trajectories[t] as Trajectory;
          const data: ReplayJobData = { policy: d.policy, episode: d.episode, traj, replays, rollout: d.rollout, credit: d.credit, seed: replaySeed(d.seed, t) };
          await children.add('replay', data, { jobId: replayJobId(id, t), parent: { id, queue: job.queueQualifiedName }, attempts: d.attempts, failParentOnFailure: true });
        }
        await job.updateData({ ...d, rolled });
        if (token && (await job.moveToWaitingChildren(token))) throw new WaitingChildrenError();
      }
      const values = (await job.getChildrenValues()) as Record<string, Trajectory[]>;
      const byId = new Map(Object.entries(values).map(([key, v]) => [key.slice(key.lastIndexOf(':') + 1), v]));
      const replays = rolled.trajectories.map((_, t) => byId.get(replayJobId(job.id as string, t)) ?? []);
      return await creditGroup(rolled, d.episode, replays, d.credit, d.seed);
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
        return await (job.name === 'replay' ? replay(job as Job<ReplayJobData>) : group(job as Job<GroupJobData>, token));
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
      const moved = await Promise.all(jobs.map(({ job, token }) => within(job.moveToWait(token).then(() => true), STOP_STEP_MS.release)));
      const released = moved.filter((m) => m === true).length;
      await within(worker.close(true), STOP_STEP_MS.close);
      await within(children.close(), STOP_STEP_MS.close);
      // A job still running holds its policy; the process ends right after, which frees it.
      if (held.size === 0) await within(cache.dispose(), STOP_STEP_MS.close);
      return { released, unreleased: jobs.length - released };
    },
  };
}
