import { basename, join } from 'node:path';
import type { Config } from '../config/schema.ts';
import { scorePlans, stepScorer } from '../credit/likelihood-scorer.ts';
import type { GroupPlan } from '../credit/plan.ts';
import { groupSeed, replaySeed } from '../random/step-seeds.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import type { RolledOut, StepStages } from '../train/grpo/types.ts';
import { jobQueue } from './coordinator.ts';
import { groupJobId, policyVersion, replayJobId, runIdOf } from './ids.ts';
import type { ReplayJobData, RolloutJobData } from './jobs.ts';
import { publishPolicy } from './policy-store.ts';
import { plannedFor, replayTrajectory, rolloutGroup, type GroupRollout } from './units.ts';

/**
 * The generating stages (rollout, run replays) as units of work seeded by their position
 * (random/step-seeds.ts): with rollout.distributed.local run one after another in the trainer, with
 * rollout.distributed.redis as BullMQ jobs on `sharp worker` processes. Both give exactly the same
 * trajectories and replays; the plan and the credit stay in the trainer (train/grpo/loop.ts).
 */
export interface DistributedSetup {
  tokenizer: Tokenizer;
  rollout: Config['rollout'];
  credit: Config['credit'];
}

const rolledOut = (groups: readonly GroupRollout[], episodes: readonly RolloutJobData['episode'][]): RolledOut => ({
  groups: groups.map((g, q) => ({ episode: episodes[q], trajectories: g.trajectories })),
  policyCalls: groups.reduce((a, g) => a + g.policyCalls, 0),
  maxBatch: groups.reduce((a, g) => Math.max(a, g.maxBatch), 0),
});

/** Concatenates a group's per-trajectory replays into the plan's item order. */
const inPlanOrder = (perTrajectory: readonly (readonly Trajectory[])[]): Trajectory[] => perTrajectory.flat();

/** rollout.distributed.local: the units in the trainer, one after another (the reference a run with workers equals). */
export function localStages(setup: DistributedSetup): StepStages {
  return {
    begin: async (model, seeds) => {
      const p = { model, tokenizer: setup.tokenizer };
      return {
        rollout: async (episodes) => {
          const groups: GroupRollout[] = [];
          for (const [q, episode] of episodes.entries())
            groups.push(await rolloutGroup(p, episode, setup.rollout, groupSeed(seeds.stepSeed, q)));
          return rolledOut(groups, episodes);
        },
        runReplays: async (plans: readonly GroupPlan[]) => {
          const out: Trajectory[][] = [];
          for (const [q, plan] of plans.entries()) {
            const per: Trajectory[][] = [];
            for (const [t, tp] of plan.trajectories.entries())
              per.push(
                await replayTrajectory(
                  p,
                  tp.traj,
                  plan.episode,
                  plannedFor(plan, t),
                  setup.rollout,
                  setup.credit,
                  replaySeed(groupSeed(seeds.stepSeed, q), t),
                ),
              );
            out.push(inPlanOrder(per));
          }
          return out;
        },
        scoreLikelihoods: (plans) => scorePlans(plans, stepScorer(model, setup.tokenizer, setup.rollout, setup.credit)),
        assignOptions: {},
      };
    },
    close: () => Promise.resolve(),
  };
}

export interface RedisSetup extends DistributedSetup {
  dist: Config['rollout']['distributed'];
  runDir: string;
  /** Tokenizer and generation files copied into every published version (it loads alone). */
  companions: readonly string[];
  progress?: (line: string) => void;
  pollMs?: number;
}

/**
 * rollout.distributed.redis: each stage's units as jobs; the trainer publishes the policy version of the step first.
 */
export function redisStages(setup: RedisSetup): StepStages & { readonly last: { jobs: number; seconds: number } } {
  const queue = jobQueue({ dist: setup.dist, progress: setup.progress, pollMs: setup.pollMs });
  const run = runIdOf(basename(setup.runDir));
  const policyDir = setup.dist.policyDir === '' ? join(setup.runDir, 'policies') : setup.dist.policyDir;
  return {
    last: queue.last,
    begin: async (model, seeds) => {
      const policy = await publishPolicy(model, policyDir, run, policyVersion(seeds.step), setup.companions);
      return {
        rollout: async (episodes) => {
          const jobs = episodes.map((episode, q) => {
            const data: RolloutJobData = {
              run,
              step: seeds.step,
              q,
              policy,
              episode,
              rollout: setup.rollout,
              seed: groupSeed(seeds.stepSeed, q),
            };
            return { id: groupJobId(run, seeds.step, q), data };
          });
          return rolledOut(await queue.run<GroupRollout>('rollout', seeds.step, jobs), episodes);
        },
        runReplays: async (plans: readonly GroupPlan[]) => {
          const jobs: { id: string; data: ReplayJobData; q: number }[] = [];
          for (const [q, plan] of plans.entries()) {
            for (const [t, tp] of plan.trajectories.entries()) {
              const replays = plannedFor(plan, t);
              if (replays.length === 0) continue;
              const data: ReplayJobData = {
                policy,
                episode: plan.episode,
                traj: tp.traj,
                replays,
                rollout: setup.rollout,
                credit: setup.credit,
                seed: replaySeed(groupSeed(seeds.stepSeed, q), t),
              };
              jobs.push({ id: replayJobId(groupJobId(run, seeds.step, q), t), data, q });
            }
          }
          const results = await queue.run<Trajectory[]>('replay', seeds.step, jobs);
          const out: Trajectory[][] = plans.map(() => []);
          // Jobs are in (group, trajectory) order, which is the plans' item order.
          jobs.forEach((j, i) => out[j.q].push(...results[i]));
          return out;
        },
        scoreLikelihoods: (plans) => scorePlans(plans, stepScorer(model, setup.tokenizer, setup.rollout, setup.credit)),
        assignOptions: {},
      };
    },
    close: () => queue.close(),
  };
}
