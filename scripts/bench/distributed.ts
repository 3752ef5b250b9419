import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { localStages, redisStages } from '../../src/distributed/stages.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { Rng } from '../../src/random/rng.ts';
import { companionFiles } from '../../src/recipes/stages/save-model.ts';
import { Tokenizer } from '../../src/tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../../src/tools/code.ts';
import { inProcessStages } from '../../src/recipes/stages/step-stages.ts';
import { runStepStages } from '../../test/step-stages.ts';
import { HAVE_REDIS, NO_REDIS_MESSAGE, startRedis } from '../../test/distributed/redis.ts';
import { MODEL, stepConfig, stepEpisodes } from '../../test/distributed/step.ts';
import { spawnWorker } from '../../test/distributed/workers.ts';
import type { BenchRow } from './types.ts';

/**
 * Distributed section of `npm run bench`: rollout trajectories/s of one collect step (B questions x
 * G trajectories, LOO replays included) with models/sharp-tiny-sft, in-process (all groups in one
 * batch), as the distributed units in the trainer process (rollout.distributed.local: one group at a
 * time), and through Redis with 1 and 2 `sharp worker` processes; and the coordinator's overhead per
 * job, (T(1 worker) - T(local)) / jobs. The simple model for N hosts (docs/operations.md "Distributed
 * rollouts"): T(N) = (T(local) + overhead x jobs) / min(N, B), B group jobs being the parallel units.
 */
export async function benchDistributed(quick: boolean): Promise<BenchRow[]> {
  const B = quick ? 2 : 4;
  // The starting policy's own prompts and episode draw, so its planners delegate and the step has replays.
  const cfg = stepConfig(4);
  const episodes = stepEpisodes(B);
  const model = await CausalLM.load(MODEL);
  const tokenizer = await Tokenizer.load(MODEL);
  const section = 'distributed';
  const rows: BenchRow[] = [];
  const trajectories = B * cfg.rollout.groupSize;
  const time = async (f: () => Promise<unknown>): Promise<number> => {
    const t0 = performance.now();
    await f();
    return (performance.now() - t0) / 1000;
  };
  try {
    const inProcess = inProcessStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit });
    // warm-up: wasm kernels and caches
    await runStepStages(inProcess, cfg.credit, episodes.slice(0, 1), model, new Rng(1));
    const tIn = await time(() => runStepStages(inProcess, cfg.credit, episodes, model, new Rng(7)));
    rows.push({
      section,
      metric: `in-process: trajectories/s (B=${B}, G=${cfg.rollout.groupSize}, LOO)`,
      value: trajectories / tIn,
      unit: 'traj/s',
    });
    const local = localStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit });
    let replayJobs = 0;
    const tLocal = await time(async () => {
      const c = await runStepStages(local, cfg.credit, episodes, model, new Rng(7), 1);
      replayJobs = c.groups.reduce(
        (a, g) => a + g.trajectories.filter((t) => t.agents.some((x) => x.role === 'worker')).length,
        0,
      );
    });
    rows.push({
      section,
      metric: 'distributed units in the trainer (local): trajectories/s',
      value: trajectories / tLocal,
      unit: 'traj/s',
    });
    if (!HAVE_REDIS) {
      console.error(`bench distributed: ${NO_REDIS_MESSAGE}; the 1- and 2-worker rows are not measured`);
      return rows;
    }
    const redis = await startRedis();
    const root = mkdtempSync(join(tmpdir(), 'sharp-bench-dist-'));
    const workers = [];
    try {
      let tOne = 0;
      for (const n of [1, 2]) {
        while (workers.length < n) {
          const w = spawnWorker(redis.url, 'bench');
          await w.waitFor(/serving queue/);
          workers.push(w);
        }
        const dc = redisStages({
          tokenizer,
          rollout: cfg.rollout,
          credit: cfg.credit,
          dist: { ...cfg.rollout.distributed, redis: redis.url, queue: 'bench' },
          runDir: join(root, `run-${n}`),
          companions: companionFiles(MODEL),
          progress: () => undefined,
        });
        // Step 1 warms the workers up (wasm kernels; the joining worker's first load); step 2 is timed and,
        // as every step of a run, publishes a new policy version that each worker loads once.
        await runStepStages(dc, cfg.credit, episodes, model, new Rng(7), 1);
        const t = await time(() => runStepStages(dc, cfg.credit, episodes, model, new Rng(7), 2));
        await dc.close();
        if (n === 1) tOne = t;
        rows.push({
          section,
          metric: `${n} worker${n > 1 ? 's' : ''}: trajectories/s`,
          value: trajectories / t,
          unit: 'traj/s',
        });
      }
      rows.push({
        section,
        metric: `coordinator overhead per job ((T1 - Tlocal) / ${B + replayJobs} jobs)`,
        value: ((tOne - tLocal) * 1000) / (B + replayJobs),
        unit: 'ms',
      });
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
      await redis.dispose();
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  } finally {
    model.dispose();
    await closeCodeSandbox();
  }
}
