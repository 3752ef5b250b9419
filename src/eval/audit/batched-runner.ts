import type { ReplayRunner } from '../../credit/counterfactual.ts';
import type { LikelihoodScorer } from '../../credit/likelihood-scorer.ts';

/**
 * A replay runner that serves the calls made together with one call of `runner`: each trajectory's
 * credit is computed as a group of one (credit/compute.ts), and the replays of the trajectories whose
 * credit is started in the same tick go into one batched engine run instead of one run each. Batches
 * run one after another (the policy serves one engine run at a time); each call gets its own items'
 * results, in order. The replays' sampling streams are named by trajectory and replica, not by their
 * place in a batch (rollout/replay.ts), so batching changes no value.
 */
export function batchedRunner(runner: ReplayRunner): ReplayRunner {
  return batchedCalls(runner, 'replay runner returned', 'trajectories');
}

/** One call of `run` for all the calls made in one tick, one batch after another; each caller gets its slice. */
function batchedCalls<I, O>(
  run: (items: I[]) => Promise<O[]>,
  what: string,
  unit: string,
): (items: readonly I[]) => Promise<O[]> {
  let queued: { items: readonly I[]; resolve: (t: O[]) => void; reject: (e: unknown) => void }[] = [];
  let last: Promise<void> = Promise.resolve();
  const flush = async (): Promise<void> => {
    const jobs = queued;
    queued = [];
    try {
      const all = jobs.flatMap((j) => j.items);
      const out = await run(all);
      if (out.length !== all.length) throw new Error(`${what} ${out.length} ${unit} for ${all.length} items`);
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
    new Promise<O[]>((resolve, reject) => {
      queued.push({ items, resolve, reject });
      // The first call of a tick schedules the batch; the calls after it in the same tick join it.
      if (queued.length === 1)
        last = last.then(() => new Promise<void>((done) => setImmediate(() => void flush().then(done))));
    });
}

/**
 * The same for the likelihood value's scorer: the contexts of the trajectories whose credit starts in one tick are
 * scored in one call (one batched forward), each call getting its own values in order.
 */
export function batchedScorer(scorer: LikelihoodScorer): LikelihoodScorer {
  return batchedCalls(scorer, 'likelihood scorer returned', 'values');
}
