import type { Episode } from '../data/episode.ts';
import type { Trajectory } from '../rollout/types.ts';
import { type Coalition, fullCoalition, leaveOneOutCoalitions } from './coalitions.ts';
import type { CreditConfig } from './config.ts';
import { evaluateReplays, type EvaluateStats, type ValueTable, valueOf } from './counterfactual.ts';
import { evaluateLikelihoods, sequentialGains, squashMarginal } from './likelihood.ts';
import type { CreditedGroup, CreditedTrajectory, TrajectoryCredit } from './credited.ts';
import {
  type ContextOf,
  type FirstError,
  type PreferencePair,
  type Resampler,
  blameLabels,
  locateFirstError,
  preferencePairs,
} from './first-error.ts';
import type { Judge } from './judges/types.ts';
import { looDeltas, plannerCredit } from './loo.ts';
import { type Label, trajectoryMessageRewards } from './message-shares.ts';
import type { GroupPlan, TrajectoryPlan } from './plan.ts';
import { agentCredits, type RewardRule } from './reward.ts';
import { efficiencyResidual, exactShapley, sampledShapley } from './shapley.ts';
import { type OutcomeFn, outcomeFunction } from './outcome.ts';
import { toolRewards, trajectoryToolReward } from './tool-reward.ts';

/**
 * Stage "assign credit": from a group plan and its values (counterfactual.ts evaluateReplays) to
 * each trajectory with its agents' credit attached (credited.ts), plus, with the judge options,
 * message shares and the failure path's preference pairs ("Who Gets the Reward & Who Gets the
 * Blame?"). Worker marginals: LOO Delta_m = v(N) - v(N \ m) or Shapley phi_m over the planned
 * coalitions (what "\ m" means is the counterfactual's: masked, resampled or repaired); the oracle
 * ceiling's are the rule judge's right / wrong labels. Planner: SHARP's mean_m max(x_m, 0), plus,
 * under repair, the mean over its wrong delegations of v(N) - v(N with that delegation repaired).
 */
export interface AssignOptions {
  /** Needed when credit.messageLevel or credit.failurePairs is on. */
  judge?: Judge;
  /** Needed when credit.failurePairs is on: the erring agent's context and the policy's resampler. */
  contextOf?: ContextOf;
  resample?: Resampler;
  /**
   * The outcome reward R (outcome.ts): the user's rewards, checked and weighted (user-reward.ts);
   * default the accuracy of credit.success.
   */
  outcome?: OutcomeFn;
}

export interface AssignedGroup {
  credited: CreditedTrajectory[];
  /** Failure-path preference pairs (credit.failurePairs). */
  pairs: PreferencePair[];
}

/** The reward rule of credit.method (reward.ts). */
function rewardRule(traj: Trajectory, cfg: CreditConfig): RewardRule {
  if (cfg.method === 'broadcast') return { kind: 'broadcast' };
  if (cfg.method === 'oracle') return { kind: 'oracle' };
  if (cfg.method === 'matpo')
    return {
      kind: 'matpo',
      accuracy: cfg.matpo.accuracy,
      formatWeight: cfg.matpo.format,
      format: trajectoryToolReward(traj, cfg.noToolCallsValue),
    };
  return { kind: 'sharp', weights: cfg.weights, toolGate: cfg.toolGate };
}

/** The per-trajectory numbers behind the agents' credit. */
function trajectoryCredit(p: TrajectoryPlan, table: ValueTable, cfg: CreditConfig): TrajectoryCredit {
  const { k, shape } = p;
  // Likelihood marginals are in nats: squashed into (-1, 1) as reward parts; deltas, phi and values stay in nats.
  const asReward = (x: number[]): number[] =>
    cfg.value === 'likelihood' ? x.map((d) => squashMarginal(d, cfg.likelihood.scale)) : x;
  const v = (s: Coalition): number => valueOf(table, s);
  const recorded = table.recorded;
  const base = { trajectoryId: p.traj.id, success: recorded, noise: table.noise, k };
  if (shape.kind === 'none')
    return { ...base, deltas: [], workerMarginal: new Array<number>(k).fill(0), plannerMarginal: 0, values: [] };
  if (shape.kind === 'oracle') {
    // The ceiling: 1 for a report that is its hop's gold answer, else 0 (no replay); the planner keeps the outcome.
    const right = new Map((p.references ?? []).map((r) => [r.delegation, r.reportRight === true ? 1 : 0]));
    return {
      ...base,
      deltas: [],
      workerMarginal: Array.from({ length: k }, (_, d) => right.get(d) ?? 0),
      plannerMarginal: 0,
      values: [],
    };
  }
  if (shape.kind === 'sequential') {
    const readThrough = table.readThrough ?? [];
    const deltas = k === 0 ? [] : sequentialGains(readThrough);
    const workerMarginal = asReward(deltas);
    return { ...base, deltas, workerMarginal, plannerMarginal: plannerCredit(workerMarginal), values: [], readThrough };
  }
  // Marginals compare replays with replays (v(N) included); the broadcast reward stays the recorded outcome.
  const vFull = v(fullCoalition(k));
  const deltas = looDeltas(vFull, leaveOneOutCoalitions(k).map(v));
  let phi: number[] | undefined;
  if (shape.kind === 'exact') phi = exactShapley(k, v);
  if (shape.kind === 'sampled') phi = sampledShapley(k, shape.perms, v);
  const workerMarginal = asReward(phi ?? deltas);
  // Planner credit is SHARP's mean_m max(x_m, 0) over its workers' credit x (LOO Delta, or phi with
  // Shapley: the same rule applied to the other marginal estimate).
  let plannerMarginal = plannerCredit(workerMarginal);
  const repairs = [...(table.plannerRepairs ?? new Map<number, number>()).entries()];
  const out: TrajectoryCredit = {
    ...base,
    deltas,
    workerMarginal,
    plannerMarginal,
    values: [...table.values.entries()],
  };
  if (repairs.length > 0) {
    const blame = repairs.map(([d, vRepaired]) => [d, vFull - vRepaired] as [number, number]);
    plannerMarginal += blame.reduce((a, [, x]) => a + x, 0) / blame.length;
    out.plannerMarginal = plannerMarginal;
    out.plannerRepairs = blame;
  }
  if (phi) {
    out.phi = phi;
    out.efficiencyResidual = efficiencyResidual(k, phi, v);
  }
  return out;
}

export async function assignCredit(
  plan: GroupPlan,
  tables: readonly ValueTable[],
  cfg: CreditConfig,
  opts: AssignOptions = {},
): Promise<AssignedGroup> {
  if ((cfg.messageLevel || cfg.failurePairs) && !opts.judge)
    throw new Error('credit: credit.messageLevel / credit.failurePairs need a judge (opts.judge)');
  if (cfg.failurePairs && (!opts.contextOf || !opts.resample))
    throw new Error('credit: credit.failurePairs needs opts.contextOf and opts.resample');
  const episode: Episode = plan.episode;
  const credited: CreditedTrajectory[] = plan.trajectories.map((p, i) => {
    const credit = trajectoryCredit(p, tables[i], cfg);
    if (p.references) credit.references = p.references;
    const agents = agentCredits(
      p.traj,
      {
        broadcast: credit.success,
        workerMarginal: credit.workerMarginal,
        plannerMarginal: credit.plannerMarginal,
        tool: toolRewards(p.traj, cfg.noToolCallsValue),
      },
      rewardRule(p.traj, cfg),
    );
    return { trajectory: p.traj, agents, credit };
  });
  const pairs: PreferencePair[] = [];
  if (opts.judge && (cfg.messageLevel || cfg.failurePairs)) {
    const failures: { ctx: { traj: Trajectory; episode: Episode }; first: FirstError }[] = [];
    for (const ct of credited) {
      const ctx = { traj: ct.trajectory, episode };
      let labels: Map<number, Label> | undefined;
      if (ct.credit.success === 0) {
        const first = await locateFirstError(ctx, opts.judge);
        ct.credit.firstError = first;
        failures.push({ ctx, first });
        // On failure only the first error is blamed; repairs after it keep label 0.
        labels = blameLabels(first, ct.trajectory);
      }
      if (cfg.messageLevel) {
        labels ??= await opts.judge.labelMessages(ctx);
        const shares = trajectoryMessageRewards(ct.trajectory, ct.agents, labels, cfg.messageShareBeta);
        if (shares.length > 0) ct.messages = shares;
      }
    }
    // The failures' alternatives: one batched resample per round (first-error.ts).
    if (cfg.failurePairs && opts.contextOf && opts.resample) {
      for (const pair of await preferencePairs(
        failures,
        opts.judge,
        opts.contextOf,
        opts.resample,
        cfg.failureResamples,
      ))
        if (pair) pairs.push(pair);
    }
  }
  return { credited, pairs };
}

export interface StepCredit {
  groups: CreditedGroup[];
  pairs: PreferencePair[];
  /** Value tables per group (for the viewer's record). */
  tables: ValueTable[][];
  replayItems: number;
  cachedCoalitions: number;
}

/**
 * Stage "evaluate" of one group: its values from its replays (counterfactual.ts) or, for the likelihood
 * value, from its scored contexts (likelihood.ts).
 */
export function evaluatePlan(
  plan: GroupPlan,
  replayed: readonly Trajectory[],
  scored: readonly number[],
  cfg: CreditConfig,
  outcome: OutcomeFn = outcomeFunction(cfg),
): { tables: ValueTable[]; stats: EvaluateStats } {
  return plan.scores.length > 0 ? evaluateLikelihoods(plan, scored, outcome) : evaluateReplays(plan, replayed, outcome);
}

/**
 * Stage "assign credit" of a whole RL step: values from each group's replays or scored contexts, then each agent's
 * credit. `scored[q]` holds group q's likelihood values (empty lists for the outcome value).
 */
export async function assignStep(
  plans: readonly GroupPlan[],
  replayed: readonly (readonly Trajectory[])[],
  scored: readonly (readonly number[])[],
  cfg: CreditConfig,
  opts: AssignOptions,
): Promise<StepCredit> {
  if (replayed.length !== plans.length)
    throw new Error(`credit: ${replayed.length} groups of replays for ${plans.length} plans`);
  if (scored.length !== plans.length)
    throw new Error(`credit: ${scored.length} groups of likelihood values for ${plans.length} plans`);
  const out: StepCredit = { groups: [], pairs: [], tables: [], replayItems: 0, cachedCoalitions: 0 };
  for (const [q, plan] of plans.entries()) {
    const { tables, stats } = evaluatePlan(plan, replayed[q], scored[q], cfg, opts.outcome);
    const assigned = await assignCredit(plan, tables, cfg, opts);
    out.groups.push({ trajectories: assigned.credited });
    out.pairs.push(...assigned.pairs);
    out.tables.push(tables);
    out.replayItems += stats.replayItems;
    out.cachedCoalitions += stats.cachedCoalitions;
  }
  return out;
}
