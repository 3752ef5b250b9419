/**
 * Stage "plan replays" of credit: which counterfactual replays each trajectory of a group needs,
 * before anything runs. Pure: the plan is data (it crosses the distributed jobs as JSON), the replays
 * run in the next stage (rollout's replay API through a runner, or queued jobs), and
 * `evaluateReplays` (counterfactual.ts) turns their outcomes into the values `assignCredit`
 * (assign.ts) reads. A new counterfactual plugs in here (what replaces a left-out worker) and in
 * the replay plan of rollout/replay.ts, nowhere else.
 */
import { MAX_EXACT_SHAPLEY_WORKERS } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { fnv1a32 } from '../random/hash.ts';
import { Rng } from '../random/rng.ts';
import { creditSeed, groupSeed } from '../random/step-seeds.ts';
import type { ReplayItem, Substitute } from '../rollout/replay.ts';
import type { Trajectory } from '../rollout/types.ts';
import {
  type Coalition,
  allCoalitions,
  fullCoalition,
  leaveOneOutCoalitions,
  maskedDelegations,
  workerCount,
} from './coalitions.ts';
import type { CreditConfig } from './config.ts';
import { type DelegationReference, delegationReferences, goldHops } from './references.ts';
import { permutationCoalitions, samplePermutations } from './shapley.ts';
import type { LikelihoodPoint } from './likelihood-context.ts';
import type { LikelihoodItem } from './likelihood-scorer.ts';
import { successFunction } from './success.ts';

/**
 * How a trajectory's worker credit is computed: nothing per worker, LOO, exact or sampled Shapley, or the oracle
 * labels.
 */
type CreditShape =
  | { kind: 'none' }
  | { kind: 'oracle' }
  | { kind: 'loo' }
  | { kind: 'exact' }
  | { kind: 'sampled'; perms: number[][] }
  /** The likelihood value's sequential form: each worker's gain at its own report (likelihood-context.ts). */
  | { kind: 'sequential' };

export interface TrajectoryPlan {
  traj: Trajectory;
  /** Workers K (one per delegation). */
  k: number;
  shape: CreditShape;
  /** Coalitions whose value is replayed (the full one first whenever anything is). */
  coalitions: Coalition[];
  /** Counterfactual repair: delegations the judge found wrong, each replayed with its subtask repaired. */
  plannerRepairs: number[];
  /** repair and oracle: what the gold decomposition says of each delegation. */
  references?: DelegationReference[];
}

/**
 * One value to estimate: a coalition, the full team with one delegation's subtask repaired, or (the likelihood value's
 * sequential form) the planner's context after `readThrough` reports.
 */
type ValueKey =
  { t: number; coalition: Coalition } | { t: number; plannerRepair: number } | { t: number; readThrough: number };

export interface GroupPlan {
  episode: Episode;
  trajectories: TrajectoryPlan[];
  /** Every replay to run, `replays` consecutive items per value in `values` order (none for the likelihood value). */
  items: ReplayItem[];
  values: ValueKey[];
  /** credit.value likelihood: the context to score of each value, in `values` order (empty for the outcome value). */
  scores: LikelihoodPoint[];
  replays: number;
  /** Requested coalitions that repeat another or need no replay (the `credit/cached_coalitions` metric). */
  repeated: number;
}

export interface PlanOptions {
  /** Permutation sampling draws from it (the credit stream); default: an Rng seeded by a hash of the trajectory id. */
  rng?: Rng;
}

const hashSeed = (s: string): number => fnv1a32(s) | 0;

function shapeOf(traj: Trajectory, k: number, cfg: CreditConfig, rng: Rng | undefined): CreditShape {
  if (cfg.method === 'broadcast' || cfg.method === 'matpo') return { kind: 'none' };
  if (cfg.method === 'oracle') return { kind: 'oracle' };
  if (cfg.method === 'loo')
    return cfg.value === 'likelihood' && cfg.likelihood.form === 'sequential'
      ? { kind: 'sequential' }
      : { kind: 'loo' };
  const exact = cfg.shapleyMode === 'exact' || (cfg.shapleyMode === 'auto' && k <= cfg.shapleyExactMaxWorkers);
  if (exact) {
    if (k > MAX_EXACT_SHAPLEY_WORKERS)
      throw new Error(
        `credit.shapleyMode=exact: trajectory ${traj.id} has ${k} workers (exact Shapley is limited to ` +
          `${MAX_EXACT_SHAPLEY_WORKERS})`,
      );
    return { kind: 'exact' };
  }
  return { kind: 'sampled', perms: samplePermutations(k, cfg.shapleyPermutations, rng ?? new Rng(hashSeed(traj.id))) };
}

/**
 * The coalitions to replay, and how many requested ones repeat another (or, without workers, are
 * the recorded outcome): the `credit/cached_coalitions` metric.
 */
function coalitionsOf(shape: CreditShape, k: number): { coalitions: Coalition[]; repeated: number } {
  if (shape.kind === 'none' || shape.kind === 'oracle' || shape.kind === 'sequential')
    return { coalitions: [], repeated: 0 };
  // LOO coalitions are always evaluated with Shapley too: the report's helpful/harmful counts use Delta.
  const wanted =
    shape.kind === 'loo'
      ? leaveOneOutCoalitions(k)
      : shape.kind === 'exact'
        ? allCoalitions(k)
        : [...permutationCoalitions(shape.perms), ...leaveOneOutCoalitions(k)];
  if (k === 0) return { coalitions: [], repeated: wanted.length };
  const asked = wanted.length === 0 ? wanted : [fullCoalition(k), ...wanted];
  const coalitions = [...new Set(asked)];
  return { coalitions, repeated: asked.length - coalitions.length };
}

/** The repair counterfactual's substitutes for the delegations a coalition leaves out: their reference reports. */
function reportSubstitutes(refs: readonly DelegationReference[], masked: readonly number[]): Substitute[] {
  const out: Substitute[] = [];
  for (const d of masked) {
    const ref = refs.find((r) => r.delegation === d);
    if (ref?.reference != null) out.push({ delegation: d, report: ref.reference });
  }
  return out;
}

export function planReplays(
  group: readonly Trajectory[],
  episode: Episode,
  cfg: CreditConfig,
  opts: PlanOptions = {},
): GroupPlan {
  for (const t of group)
    if (t.episodeId !== episode.id)
      throw new Error(`credit: trajectory ${t.id} is for episode ${t.episodeId}, not ${episode.id}`);
  if (!Number.isInteger(cfg.replays) || cfg.replays < 1)
    throw new Error(`credit.replays: ${cfg.replays} is not a positive integer`);
  const likelihood = cfg.value === 'likelihood' && (cfg.method === 'loo' || cfg.method === 'shapley');
  if (likelihood && cfg.counterfactual !== 'mask')
    throw new Error(`credit.value likelihood: counterfactual ${cfg.counterfactual} needs replays (mask only)`);
  const repair = cfg.counterfactual === 'repair' && cfg.method !== 'broadcast' && cfg.method !== 'matpo';
  const needsGold = repair || cfg.method === 'oracle';
  const what = cfg.method === 'oracle' ? 'credit.method=oracle' : 'credit.counterfactual=repair';
  if (needsGold) goldHops(episode, what);
  const match = successFunction(cfg.success, { f1Threshold: cfg.f1Threshold });
  let repeated = 0;
  const trajectories: TrajectoryPlan[] = group.map((traj) => {
    const k = workerCount(traj);
    const shape = shapeOf(traj, k, cfg, opts.rng);
    const c = coalitionsOf(shape, k);
    repeated += c.repeated;
    const plan: TrajectoryPlan = { traj, k, shape, coalitions: c.coalitions, plannerRepairs: [] };
    if (needsGold) plan.references = delegationReferences(traj, episode, { what, hopMatchF1: cfg.hopMatchF1, match });
    if (repair && cfg.repairPlanner && plan.references && plan.coalitions.length > 0)
      plan.plannerRepairs = plan.references
        .filter((r) => r.delegationLabel === -1 && r.goldSubtask !== null)
        .map((r) => r.delegation);
    return plan;
  });
  const items: ReplayItem[] = [];
  const values: ValueKey[] = [];
  const scores: LikelihoodPoint[] = [];
  if (likelihood) {
    // No replays: one scored context per value (likelihood-scorer.ts).
    trajectories.forEach((p, t) => {
      for (const s of p.coalitions) {
        values.push({ t, coalition: s });
        scores.push({ masked: maskedDelegations(s, p.k) });
      }
      if (p.shape.kind === 'sequential' && p.k > 0)
        for (let j = 0; j <= p.k; j++) {
          values.push({ t, readThrough: j });
          scores.push({ masked: [], readThrough: j });
        }
    });
    return { episode, trajectories, items, values, scores, replays: cfg.replays, repeated };
  }
  trajectories.forEach((p, t) => {
    for (const s of p.coalitions) {
      const masked = maskedDelegations(s, p.k);
      values.push({ t, coalition: s });
      for (let r = 0; r < cfg.replays; r++) {
        const item: ReplayItem = { traj: p.traj, episode, masked, replica: r };
        if (repair && p.references) {
          const subs = reportSubstitutes(p.references, masked);
          if (subs.length > 0) item.substitutes = subs;
        }
        items.push(item);
      }
    }
    for (const d of p.plannerRepairs) {
      const goldSubtask = p.references?.find((x) => x.delegation === d)?.goldSubtask as string;
      values.push({ t, plannerRepair: d });
      for (let r = 0; r < cfg.replays; r++)
        items.push({
          traj: p.traj,
          episode,
          masked: [],
          replica: r,
          substitutes: [{ delegation: d, subtask: goldSubtask }],
        });
    }
  });
  return { episode, trajectories, items, values, scores, replays: cfg.replays, repeated };
}

/**
 * Stage "plan replays" of a whole RL step: one plan per question's group, in question order; the
 * plan of each group draws from its own seeded stream (random/step-seeds.ts), so a group's plan is
 * the same in this process and on a worker.
 */
export function planStep(
  groups: readonly { episode: Episode; trajectories: readonly Trajectory[] }[],
  cfg: CreditConfig,
  stepSeed: number,
): GroupPlan[] {
  return groups.map((g, q) =>
    planReplays(g.trajectories, g.episode, cfg, { rng: new Rng(creditSeed(groupSeed(stepSeed, q))) }),
  );
}

/** The contexts a likelihood plan scores, in `values` order (likelihood-scorer.ts). */
export function likelihoodItems(plan: GroupPlan): LikelihoodItem[] {
  return plan.values.map((key, i) => ({
    traj: (plan.trajectories[key.t] as TrajectoryPlan).traj,
    episode: plan.episode,
    point: plan.scores[i] as LikelihoodPoint,
  }));
}
