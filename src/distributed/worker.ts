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
  close: () => Promise<void>;
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
        for (const [t, masked] of plan.entries()) {
          if (masked.length === 0) continue;
          const traj = rolled.trajectories[t] as Trajectory;
          const data: ReplayJobData = { policy: d.policy, episode: d.episode, traj, masked, rollout: d.rollout, credit: d.credit, seed: replaySeed(d.seed, t) };
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
      return await replayTrajectory(policy, d.traj, d.episode, d.masked, d.rollout, d.credit, d.seed);
    } finally {
      release();
    }
  };

  const worker = new Worker(
    o.queue,
    async (job: Job, token?: string) => (job.name === 'replay' ? replay(job as Job<ReplayJobData>) : group(job as Job<GroupJobData>, token)),
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
  worker.on('ready', () => {
    if (down) log('redis: reconnected');
    down = false;
  });
  worker.on('active', (job) => log(`start ${job.name} ${job.id}`));
  worker.on('completed', (job) => log(`done ${job.name} ${job.id}`));
  worker.on('failed', (job, err) => log(`failed ${job?.name} ${job?.id}: ${err.message.split('\n')[0]}`));
  return {
    worker,
    cache,
    close: async () => {
      await worker.close();
      await children.close();
      await cache.dispose();
    },
  };
}
