import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import type { Config } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { companionFiles } from '../recipes/stages/save-model.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import type { StepOutput } from '../train/grpo/step-report.ts';
import { runStepStages } from '../../test/step-stages.ts';
import { HAVE_REDIS, NO_REDIS_MESSAGE, startRedis, type RedisServer } from '../../test/distributed/redis.ts';
import { MODEL, stepConfig, stepEpisodes } from '../../test/distributed/step.ts';
import { localStages, redisStages } from './stages.ts';
import { serveRollouts, type Serving } from './worker.ts';

/**
 * One distributed step through a real redis-server and a real BullMQ worker equals the same step in
 * the trainer process (rollout.distributed.local), trajectories and credits, with the rollouts and the
 * counterfactual replays as jobs; asking for the step again re-attaches to the finished jobs.
 */
if (!HAVE_REDIS) console.warn(NO_REDIS_MESSAGE);

const noPerf = (c: StepOutput): StepOutput =>
  JSON.parse(
    JSON.stringify({
      ...c,
      metrics: Object.fromEntries(Object.entries(c.metrics).filter(([k]) => !k.startsWith('perf/'))),
    }),
  ) as StepOutput;

describe.skipIf(!HAVE_REDIS)('distributed collect (redis-server + BullMQ worker)', () => {
  let redis: RedisServer;
  let root: string;
  let model: CausalLM;
  let tokenizer: Tokenizer;
  let serving: Serving;
  let cfg: Config;
  let episodes: Episode[];
  const lines: string[] = [];

  beforeAll(async () => {
    await initBackend('wasm');
    redis = await startRedis();
    root = mkdtempSync(join(tmpdir(), 'sharp-dist-'));
    model = await CausalLM.load(MODEL);
    tokenizer = await Tokenizer.load(MODEL);
    cfg = stepConfig(2, { redis: redis.url, queue: 'q-test', jobTimeoutS: 400 });
    episodes = stepEpisodes(2);
    serving = serveRollouts({
      redis: redis.url,
      queue: 'q-test',
      concurrency: 1,
      lockMs: 10_000,
      log: (l) => lines.push(l),
    });
  });
  afterAll(async () => {
    await serving?.close();
    model?.dispose();
    await closeCodeSandbox();
    await redis?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it('gives the trajectories and credits of the in-process step with the same seed, replays as child jobs', async () => {
    const local = await runStepStages(
      localStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit }),
      cfg.credit,
      episodes,
      model,
      new Rng(7),
      1,
    );
    const dc = redisStages({
      tokenizer,
      rollout: cfg.rollout,
      credit: cfg.credit,
      dist: cfg.rollout.distributed,
      runDir: join(root, 'run-a'),
      companions: companionFiles(MODEL),
      progress: () => undefined,
    });
    try {
      const rng = new Rng(7);
      const dist = await runStepStages(dc, cfg.credit, episodes, model, rng, 1);
      expect(noPerf(dist)).toEqual(noPerf(local));
      expect(rng.state()).toEqual(
        (() => {
          const r = new Rng(7);
          r.int(0, 0x7fffffff);
          return r.state();
        })(),
      );
      // The step had counterfactual replays, and they ran as replay jobs.
      const replays = local.metrics?.['credit/replays'] ?? 0;
      expect(replays).toBeGreaterThan(0);
      // The viewer's record came back through the jobs: both groups, with the replayed answers.
      expect(dist.record?.groups.map((g) => g.episodeId)).toEqual(episodes.map((e) => e.id));
      // every coalition of a trajectory with workers was replayed credit.replays times, the full one included
      expect(
        dist.record?.groups.flatMap((g) =>
          g.trajectories.flatMap((t) => (t.k > 0 ? t.coalitions.flatMap((c) => c.answers) : [])),
        ).length,
      ).toBe(replays);
      expect(replays % cfg.credit.replays).toBe(0);
      const queue = new Queue('q-test', { connection: { host: '127.0.0.1', port: redis.port } });
      const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active');
      const replayJobs = lines.filter((l) => l.startsWith('done replay')).length;
      expect(replayJobs).toBeGreaterThan(0);
      expect(counts).toEqual({ completed: 2 + replayJobs, failed: 0, waiting: 0, active: 0 });
      expect(lines.filter((l) => l.startsWith('done rollout')).length).toBe(2);
      // Asking for step 1 again (a resumed trainer) re-attaches: the same result and no job runs again.
      const before = lines.length;
      const again = await runStepStages(dc, cfg.credit, episodes, model, new Rng(7), 1);
      expect(noPerf(again)).toEqual(noPerf(local));
      expect(lines.length).toBe(before);
      expect(await queue.getJobCounts('completed')).toEqual({ completed: 2 + replayJobs });
      await queue.close();
    } finally {
      await dc.close();
    }
  }, 900_000);
});
