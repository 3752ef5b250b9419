import { basename, join } from 'node:path';
import { Queue } from 'bullmq';
import type { Config } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import { UserError } from '../errors.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import type { Rng } from '../random/rng.ts';
import type { Collected, CollectContext } from '../train/grpo/types.ts';
import { assemble } from './assemble.ts';
import { connectionOf, missingRedisClient } from './connection.ts';
import { groupJobId, groupSeed, policyVersion, runIdOf } from './ids.ts';
import type { GroupJobData } from './jobs.ts';
import { stepSeedOf, type UnitsSetup } from './local.ts';
import { publishPolicy } from './policy-store.ts';
import type { GroupOutcome } from './units.ts';

/**
 * The trainer's side of a distributed step: publish the policy version, enqueue one group job per
 * question under its deterministic id, and poll until every one has completed, re-adding any that
 * Redis no longer knows (a restart without persistence) and re-attaching to those that exist (a
 * resumed trainer). The results are assembled exactly as the in-process collect assembles its own.
 */
type DistributedConfig = Config['rollout']['distributed'];

export interface DistributedSetup extends UnitsSetup {
  dist: DistributedConfig;
  runDir: string;
  /** Tokenizer and generation files copied into every published version (it loads alone). */
  companions: readonly string[];
  /** One progress line per change (default: stderr). */
  progress?: (line: string) => void;
  pollMs?: number;
}

export interface DistributedCollect {
  collect: (episodes: Episode[], model: CausalLM, rng: Rng, ctx: CollectContext) => Promise<Collected>;
  /** Per step: jobs, seconds from enqueue to the last result (for the bench). */
  readonly last: { jobs: number; seconds: number };
  close: () => Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A poll round bounded in time. BullMQ's client waits for Redis' 'ready' without a limit (ioredis
 * reconnects forever), so a round against a Redis that never answers would never return and the
 * step's deadline would never be checked; a round that is too slow counts as Redis unreachable.
 * Every command of a round is idempotent, so a late one finishing after the next round began is harmless.
 */
async function bounded<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`no answer within ${(ms / 1000).toFixed(1)} s`)), ms)));
  work.catch(() => undefined); // a round given up on may still fail later: nobody waits for it
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
const ROUND_MS = 5000;
const firstLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0] as string;

export function makeDistributedCollect(setup: DistributedSetup): DistributedCollect {
  const d = setup.dist;
  const missing = missingRedisClient();
  if (missing) throw new UserError(`rollout.distributed.redis is set, but ${missing}`);
  let connection;
  try {
    connection = connectionOf(d.redis, 'trainer');
  } catch (err) {
    throw new UserError(`rollout.distributed.redis: ${firstLine(err)}`);
  }
  const queue = new Queue(d.queue, { connection });
  let lastRedisError = '';
  queue.on('error', (err) => (lastRedisError = firstLine(err)));
  const run = runIdOf(basename(setup.runDir));
  const policyDir = d.policyDir === '' ? join(setup.runDir, 'policies') : d.policyDir;
  const progress = setup.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const pollMs = setup.pollMs ?? 50;
  const last = { jobs: 0, seconds: 0 };

  const collect = async (episodes: Episode[], model: CausalLM, rng: Rng, ctx: CollectContext): Promise<Collected> => {
    const stepSeed = stepSeedOf(rng);
    const policy = await publishPolicy(model, policyDir, run, policyVersion(ctx.step), setup.companions);
    const jobs = episodes.map((episode, q) => {
      const data: GroupJobData = { run, step: ctx.step, q, policy, episode, rollout: setup.rollout, credit: setup.credit, seed: groupSeed(stepSeed, q), attempts: d.retries + 1 };
      return { id: groupJobId(run, ctx.step, q), data };
    });
    const t0 = performance.now();
    const deadline = t0 + d.jobTimeoutS * 1000;
    const results = new Map<string, GroupOutcome>();
    let downSince: number | undefined;
    let shown = '';
    // One look at every unfinished job: add the unknown ones (first time, or lost by Redis), collect the finished.
    const pollRound = async (): Promise<void> => {
      for (const j of jobs) {
        if (results.has(j.id)) continue;
        const state = await queue.getJobState(j.id);
        if (state === 'unknown') {
          await queue.add('group', j.data, { jobId: j.id, attempts: d.retries + 1, backoff: { type: 'fixed', delay: 500 } });
        } else if (state === 'completed' || state === 'failed') {
          const job = await queue.getJob(j.id);
          if (!job) continue; // removed between the two calls: re-added next round
          if (state === 'failed') throw new UserError(`rollout.distributed: step ${ctx.step}: job ${j.id} failed after ${job.attemptsMade} attempt(s): ${firstLine(job.failedReason)}`);
          results.set(j.id, job.returnvalue as GroupOutcome);
        }
      }
    };
    while (results.size < jobs.length) {
      const roundStart = performance.now();
      try {
        await bounded(Math.max(250, Math.min(ROUND_MS, deadline - performance.now())), pollRound());
        if (downSince !== undefined) progress(`rollout step ${ctx.step}: redis reconnected after ${((performance.now() - downSince) / 1000).toFixed(1)} s`);
        downSince = undefined;
        lastRedisError = '';
      } catch (err) {
        if (err instanceof UserError) throw err;
        lastRedisError ||= firstLine(err); // the client's own error (e.g. ECONNREFUSED) names the cause better
        if (downSince === undefined) progress(`rollout step ${ctx.step}: redis unreachable (${lastRedisError}); retrying until rollout.distributed.jobTimeoutS`);
        downSince ??= roundStart;
      }
      const line = `rollout step ${ctx.step}: ${results.size}/${jobs.length} groups done`;
      if (line !== shown) progress((shown = line));
      if (results.size === jobs.length) break;
      if (performance.now() > deadline) {
        if (downSince !== undefined) throw new UserError(`rollout.distributed: step ${ctx.step}: Redis at ${d.redis} unreachable for ${((performance.now() - downSince) / 1000).toFixed(0)} s (${lastRedisError})`);
        throw new UserError(`rollout.distributed: step ${ctx.step}: ${results.size}/${jobs.length} group jobs done after rollout.distributed.jobTimeoutS=${d.jobTimeoutS} s (is a worker serving queue '${d.queue}'? sharp worker --redis ${d.redis})`);
      }
      await sleep(pollMs);
    }
    const seconds = (performance.now() - t0) / 1000;
    Object.assign(last, { jobs: jobs.length, seconds });
    // Wall time of the whole step: rollouts and replays overlap across workers, so the split is the jobs' own.
    return assemble(jobs.map((j) => results.get(j.id) as GroupOutcome), { generate: seconds, credit: 0 }, setup.credit);
  };
  return { collect, last, close: () => queue.close() };
}
