import type { CreditedTrajectory } from '../../credit/credited.ts';
import type { Role } from '../../rollout/types.ts';
import { batchAdvantages, messageAdvantage, type BatchAdvantages, type GroupAdvantages, type GroupRewards, type RewardScale } from './advantages.ts';
import { capLength, trajectorySequences, type ChatEncoder, type RlSequence } from '../batches/sequences.ts';
import type { UpdateStats } from './update.ts';
import type { CreditedGroup } from './types.ts';

/**
 * From one step's credited trajectories to the GRPO batch and the step's reward metrics
 * (docs/architecture.md: credit -> advantages -> token advantages). A group is the G credited
 * trajectories of one question.
 */

/** Per-trajectory, per-agent (by agent id) rewards of a group. */
export function groupRewards(g: CreditedGroup): GroupRewards {
  return g.trajectories.map((ct) => ct.agents.map((c) => ({ role: c.role, total: c.total })));
}

export interface RlBatch {
  sequences: RlSequence[];
  advantages: BatchAdvantages;
  /** Turns dropped for exceeding maxTokens. */
  dropped: number;
}

/** message index -> advantage for the messages of `ct` that carry a share (advantages.ts messageAdvantage). */
function messageAdvantages(ct: CreditedTrajectory, ga: GroupAdvantages): Map<number, number> {
  const mine = ct.messages ?? [];
  const count = new Map<number, number>();
  for (const m of mine) count.set(m.agent, (count.get(m.agent) ?? 0) + 1);
  const out = new Map<number, number>();
  for (const m of mine) {
    const agent = ct.agents[m.agent];
    if (!agent) throw new Error(`rl batch: message reward for trajectory ${ct.trajectory.id} names agent ${m.agent}, which it does not have`);
    out.set(m.messageIndex, messageAdvantage(ga, agent.role, agent.total, m.reward, count.get(m.agent) as number));
  }
  return out;
}

/**
 * Advantages per (group, role), then one sequence per generated turn of every non-skipped group,
 * each carrying its agent's advantage (and, with message rewards, each message its own). Turns longer than `maxTokens` (when given) are dropped.
 */
export function buildRlBatch(groups: readonly CreditedGroup[], enc: ChatEncoder, advEps: number, maxTokens?: number, scale: RewardScale = 'group'): RlBatch {
  const advantages = batchAdvantages(groups.map(groupRewards), advEps, scale);
  const all: RlSequence[] = [];
  groups.forEach((g, gi) => {
    const ga = advantages.groups[gi];
    if (!ga || ga.skipped) return;
    g.trajectories.forEach((ct, ti) => all.push(...trajectorySequences(ct.trajectory, ga.adv[ti] as number[], enc, { messageAdv: ct.messages?.length ? messageAdvantages(ct, ga) : undefined })));
  });
  const { kept, dropped } = maxTokens ? capLength(all, maxTokens) : { kept: all, dropped: 0 };
  return { sequences: kept, advantages, dropped };
}

const mean = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, x) => a + x, 0) / xs.length);

/**
 * Reward metrics of a step, namespaced for metrics.jsonl / TensorBoard / `sharp plot`:
 * `reward/<role>` (mean total), `reward/<part>/<role>` (broadcast, marginal, tool), `credit/<role>`
 * (mean marginal credit, the SHARP part), `accuracy` (fraction of trajectories whose planner got the
 * broadcast reward, i.e. answered correctly), `adv/*`, `groups/skipped`.
 */
export function rewardMetrics(groups: readonly CreditedGroup[], adv: BatchAdvantages): Record<string, number> {
  const out: Record<string, number> = {};
  const credits = groups.flatMap((g) => g.trajectories.flatMap((ct) => ct.agents));
  const roles = [...new Set(credits.map((c) => c.role))].sort() as Role[];
  for (const role of roles) {
    const mine = credits.filter((c) => c.role === role);
    out[`reward/${role}`] = mean(mine.map((c) => c.total));
    for (const part of ['broadcast', 'marginal', 'tool'] as const) out[`reward/${part}/${role}`] = mean(mine.map((c) => c.parts[part]));
    out[`credit/${role}`] = mean(mine.map((c) => c.parts.marginal));
  }
  const planners = credits.filter((c) => c.agent === 0);
  out.accuracy = mean(planners.map((c) => (c.parts.broadcast > 0 ? 1 : 0)));
  out['adv/mean'] = adv.stats.mean;
  out['adv/std'] = adv.stats.std;
  out['adv/min'] = adv.stats.min;
  out['adv/max'] = adv.stats.max;
  out['groups/skipped'] = adv.skippedGroups;
  out['groups/total'] = groups.length;
  return out;
}

/** Update statistics under the cleanRL-style names (`losses/*`, `grad/norm`, `dpo/*`). */
export function updateMetrics(s: UpdateStats): Record<string, number> {
  const rename: Record<string, string> = {
    loss: 'losses/total',
    grpoLoss: 'losses/policy',
    clipFracLow: 'losses/clipfrac_low',
    clipFracHigh: 'losses/clipfrac_high',
    approxKl: 'losses/approx_kl',
    refKl: 'losses/ref_kl',
    entropy: 'losses/entropy',
    ratioMin: 'losses/ratio_min',
    ratioMax: 'losses/ratio_max',
    gradNorm: 'grad/norm',
    tokens: 'batch/tokens',
    sequences: 'batch/sequences',
    microBatches: 'batch/micro_batches',
  };
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith('dpo/')) out[k] = v;
    else if (rename[k]) out[rename[k] as string] = v;
  }
  if (s.clipFracLow !== undefined && s.clipFracHigh !== undefined) out['losses/clipfrac'] = s.clipFracLow + s.clipFracHigh;
  return out;
}
