import type { ReplayItem, ReplayRunner } from '../../credit/counterfactual.ts';
import type { Trajectory } from '../../rollout/types.ts';

/**
 * A replay runner that serves the calls made together with one call of `runner`: each trajectory's
 * credit is computed as a group of one (credit/compute.ts), and the replays of the trajectories whose
 * credit is started in the same tick go into one batched engine run instead of one run each. Batches
 * run one after another (the policy serves one engine run at a time); each call gets its own items'
 * results, in order. The replays' sampling streams are named by trajectory and replica, not by their
 * place in a batch (rollout/replay.ts), so batching changes no value.
 */
export function batchedRunner(runner: ReplayRunner): ReplayRunner {
  let queued: { items: ReplayItem[]; resolve: (t: Trajectory[]) => void; reject: (e: unknown) => void }[] = [];
  let last: Promise<void> = Promise.resolve();
  const flush = async (): Promise<void> => {
    const jobs = queued;
    queued = [];
    try {
      const all = jobs.flatMap((j) => j.items);
      const out = await runner(all);
      if (out.length !== all.length)
        throw new Error(`replay runner returned ${out.length} trajectories for ${all.length} items`);
      let at = 0;
      for (const j of jobs) {
        j.resolve(out.slice(at, at + j.items.length));
        at += j.items.length;
      }
    } catch (err) {
      for (const j of jobs) j.reject(err);
    }
  };
  return (items) =>
    new Promise<Trajectory[]>((resolve, reject) => {
      queued.push({ items, resolve, reject });
      // The first call of a tick schedules the batch; the calls after it in the same tick join it.
      if (queued.length === 1)
        last = last.then(() => new Promise<void>((done) => setImmediate(() => void flush().then(done))));
    });
}
