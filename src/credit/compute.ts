import type { z } from 'zod';
import { MAX_EXACT_SHAPLEY_WORKERS, type creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { fnv1a32 } from '../random/hash.ts';
import { Rng } from '../random/rng.ts';
import type { Trajectory } from '../rollout/types.ts';
import { type Coalition, allCoalitions, fullCoalition, leaveOneOutCoalitions, workerCount } from './coalitions.ts';
import { CoalitionCache, type EvaluateStats, evaluateCoalitions, type ReplayRunner, valueOf } from './counterfactual.ts';
import { type CreditedTrajectory, creditedTrajectories } from './credited.ts';
import { type ContextOf, type FirstError, type PreferencePair, type Resampler, blameLabels, locateFirstError, preferencePairs } from './first-error.ts';
import type { Judge } from './judges/types.ts';
import { looDeltas, plannerCredit } from './loo.ts';
import { type Label, type MessageReward, trajectoryMessageRewards } from './message-shares.ts';
import { type CreditReport, type TrajectoryCreditSummary, creditReport } from './report.ts';
import { type AgentCredit, agentCredits, type RewardRule } from './reward.ts';
import { efficiencyResidual, exactShapley, permutationCoalitions, samplePermutations, sampledShapley } from './shapley.ts';
import { successFunction } from './success.ts';
import { toolRewards, trajectoryToolReward } from './tool-reward.ts';

/**
 * The credit stage the trainer calls once per group: plans the
 * coalitions every trajectory needs, evaluates them in ONE batched replay run (cached by coalition),
 * turns the values into LOO / Shapley credit, adds broadcast and tool rewards, and optionally splits
 * credit over messages and runs the failure path.
 */
export type CreditConfig = z.infer<typeof creditSection>;

export interface CreditOptions {
  /** Permutation sampling draws from it (the credit stream, never the rollouts'); default: an Rng seeded by a hash of the trajectory id. */
  rng?: Rng;
  /** Coalition values already computed (shared across calls). */
  cache?: CoalitionCache;
  /** Needed when credit.messageLevel or credit.failurePairs is on. */
  judge?: Judge;
  /** Needed when credit.failurePairs is on: the erring agent's context and the policy's resampler. */
  contextOf?: ContextOf;
  resample?: Resampler;
}

interface TrajectoryCredit extends TrajectoryCreditSummary {
  /** R(tau), the recorded outcome: the broadcast reward. */
  success: number;
  /** Replay noise floor of this trajectory (ValueTable.noise; 0 when nothing was replayed). */
  noise: number;
  k: number;
  /** Shapley values per worker (method shapley). */
  phi?: number[];
  /** R_mc per worker (by delegation) and of the planner. */
  workerMarginal: number[];
  plannerMarginal: number;
  values: ReadonlyMap<Coalition, number>;
  firstError?: FirstError;
}

export interface CreditResult {
  /** Each trajectory with its agents' credit and message shares attached: what the trainer reads. */
  credited: CreditedTrajectory[];
  credits: AgentCredit[];
  trajectories: TrajectoryCredit[];
  messageRewards: MessageReward[];
  pairs: PreferencePair[];
  report: CreditReport;
  stats: EvaluateStats;
}

/** A stable seed per trajectory id (FNV-1a as a signed 32-bit integer). */
const hashSeed = (s: string): number => fnv1a32(s) | 0;

type Plan = { kind: 'none' } | { kind: 'loo' } | { kind: 'exact' } | { kind: 'sampled'; perms: number[][] };

function plan(traj: Trajectory, k: number, cfg: CreditConfig, rng: Rng | undefined): Plan {
  if (cfg.method === 'broadcast' || cfg.method === 'matpo') return { kind: 'none' };
  if (cfg.method === 'loo') return { kind: 'loo' };
  const exact = cfg.shapleyMode === 'exact' || (cfg.shapleyMode === 'auto' && k <= cfg.shapleyExactMaxWorkers);
  if (exact) {
    if (k > MAX_EXACT_SHAPLEY_WORKERS) throw new Error(`credit.shapleyMode=exact: trajectory ${traj.id} has ${k} workers (exact Shapley is limited to ${MAX_EXACT_SHAPLEY_WORKERS})`);
    return { kind: 'exact' };
  }
  return { kind: 'sampled', perms: samplePermutations(k, cfg.shapleyPermutations, rng ?? new Rng(hashSeed(traj.id))) };
}

function coalitionsOf(p: Plan, k: number): Coalition[] {
  if (p.kind === 'none') return [];
  // LOO coalitions are always evaluated with Shapley too: the report's helpful/harmful counts use Delta.
  if (p.kind === 'loo') return leaveOneOutCoalitions(k);
  if (p.kind === 'exact') return allCoalitions(k);
  return [...permutationCoalitions(p.perms), ...leaveOneOutCoalitions(k)];
}

/** The reward rule of credit.method (reward.ts). */
function rewardRule(traj: Trajectory, cfg: CreditConfig): RewardRule {
  if (cfg.method === 'broadcast') return { kind: 'broadcast' };
  if (cfg.method === 'matpo') return { kind: 'matpo', accuracy: cfg.matpo.accuracy, formatWeight: cfg.matpo.format, format: trajectoryToolReward(traj, cfg.noToolCallsValue) };
  return { kind: 'sharp', weights: cfg.weights, toolGate: cfg.toolGate };
}

export async function computeCredits(group: readonly Trajectory[], episode: Episode, runner: ReplayRunner, cfg: CreditConfig, opts: CreditOptions = {}): Promise<CreditResult> {
  for (const t of group) if (t.episodeId !== episode.id) throw new Error(`computeCredits: trajectory ${t.id} is for episode ${t.episodeId}, not ${episode.id}`);
  if ((cfg.messageLevel || cfg.failurePairs) && !opts.judge) throw new Error('computeCredits: credit.messageLevel / credit.failurePairs need a judge (opts.judge)');
  if (cfg.failurePairs && (!opts.contextOf || !opts.resample)) throw new Error('computeCredits: credit.failurePairs needs opts.contextOf and opts.resample');
  const success = successFunction(cfg.success, { f1Threshold: cfg.f1Threshold });
  const ks = group.map(workerCount);
  const plans = group.map((t, i) => plan(t, ks[i], cfg, opts.rng));
  const { tables, stats } = await evaluateCoalitions(
    group.map((traj, i) => ({ traj, episode, coalitions: coalitionsOf(plans[i], ks[i]) })),
    runner,
    { success, replays: cfg.replays },
    opts.cache ?? new CoalitionCache(),
  );

  const trajectories: TrajectoryCredit[] = [];
  const credits: AgentCredit[] = [];
  group.forEach((traj, i) => {
    const k = ks[i];
    const p = plans[i];
    const table = tables[i];
    const v = (s: Coalition): number => valueOf(table, s);
    const recorded = table.recorded;
    // Marginals compare replays with replays (v(N) included); the broadcast reward stays the recorded outcome.
    const vFull = p.kind === 'none' ? recorded : v(fullCoalition(k));
    const deltas = p.kind === 'none' ? [] : looDeltas(vFull, leaveOneOutCoalitions(k).map(v));
    let phi: number[] | undefined;
    if (p.kind === 'exact') phi = exactShapley(k, v);
    if (p.kind === 'sampled') phi = sampledShapley(k, p.perms, v);
    const workerMarginal = phi ?? (p.kind === 'none' ? new Array<number>(k).fill(0) : deltas);
    // Planner credit is SHARP's mean_m max(x_m, 0) over its workers' credit x (LOO Delta, or phi
    // with Shapley: the same rule applied to the other marginal estimate).
    const plannerMarginal = p.kind === 'none' ? 0 : plannerCredit(workerMarginal);
    trajectories.push({
      trajectoryId: traj.id,
      success: recorded,
      noise: table.noise,
      k,
      deltas,
      phi,
      efficiencyResidual: phi ? efficiencyResidual(k, phi, v) : undefined,
      workerMarginal,
      plannerMarginal,
      values: table.values,
    });
    credits.push(...agentCredits(traj, { broadcast: recorded, workerMarginal, plannerMarginal, tool: toolRewards(traj, cfg.noToolCallsValue) }, rewardRule(traj, cfg)));
  });

  const messageRewards: MessageReward[] = [];
  const pairs: PreferencePair[] = [];
  if (opts.judge && (cfg.messageLevel || cfg.failurePairs)) {
    const failures: { ctx: { traj: Trajectory; episode: Episode }; first: FirstError }[] = [];
    for (const [i, traj] of group.entries()) {
      const ctx = { traj, episode };
      const failed = trajectories[i].success === 0;
      let labels: Map<number, Label> | undefined;
      if (failed) {
        const first = await locateFirstError(ctx, opts.judge);
        trajectories[i].firstError = first;
        failures.push({ ctx, first });
        // On failure only the first error is blamed; repairs after it keep label 0.
        labels = blameLabels(first, traj);
      }
      if (cfg.messageLevel) {
        labels ??= await opts.judge.labelMessages(ctx);
        messageRewards.push(...trajectoryMessageRewards(traj, credits, labels, cfg.messageShareBeta));
      }
    }
    // The failures' alternatives: one batched resample per round (first-error.ts).
    if (cfg.failurePairs && opts.contextOf && opts.resample) {
      for (const pair of await preferencePairs(failures, opts.judge, opts.contextOf, opts.resample, cfg.failureResamples)) if (pair) pairs.push(pair);
    }
  }
  return { credited: creditedTrajectories(group, credits, messageRewards), credits, trajectories, messageRewards, pairs, report: creditReport(trajectories, credits), stats };
}
