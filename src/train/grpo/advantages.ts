/**
 * Per-(group, role) advantage normalisation:
 *   A(i, m) = (R(i, m) - mean_role) / (std_role + eps)
 * where mean and std run over every agent of role(m) in every trajectory of the group (the G
 * samples of one question). Planners and workers are normalised apart because their rewards have
 * different scales (a planner gets mean max(Delta, 0), a worker the signed Delta; SHARP section 3).
 *
 * std is the POPULATION std (divide by n, not n - 1): it is defined for n = 1 (a role that appears
 * once in a group gets A = 0 instead of 0/0), and it keeps |A| <= sqrt(n - 1) for every n. TRL's
 * GRPO uses the Bessel-corrected std; with G = 8 the two differ by a factor sqrt(8/7) = 1.07, which
 * the learning rate absorbs.
 *
 * How the centred reward is scaled (`train.scaleRewards`, TRL's `scale_rewards`):
 * - `group` (default): by the (group, role) std, as above.
 * - `batch`: by the std of the role's rewards over the whole step (every group), the group mean
 *   still centring: "Tricks or Traps? A Deep Dive into RL for LLM Reasoning" (Lite PPO) reports
 *   it more robust. A group in which only the tool reward varies (every outcome failed) then keeps
 *   advantages of that small size instead of being stretched to unit scale.
 * - `none`: not scaled, A = R - mean_role (Dr. GRPO, "Understanding R1-Zero-Like Training").
 *
 * A role whose rewards are all equal gets exactly zero advantages (not (R - mean) / eps of float
 * rounding noise). A group in which every agent's advantage is zero carries no learning signal and
 * is marked `skipped` (it is still returned, so indices line up with the input).
 */
import type { CreditedTrajectory } from '../../credit/credited.ts';
import type { Role } from '../../rollout/types.ts';
import { capLength, trajectorySequences, type ChatEncoder, type RlSequence } from '../batches/sequences.ts';
import type { CreditedGroup } from './types.ts';

/** What the credit module gives the trainer for one agent of one trajectory. */
interface AgentReward {
  role: Role;
  total: number;
}

/** One group: G trajectories of one question; each trajectory lists its agents' rewards by agent id. */
export type GroupRewards = readonly (readonly AgentReward[])[];

interface RoleStats {
  n: number;
  mean: number;
  std: number;
}

export interface GroupAdvantages {
  /** adv[i][m]: advantage of agent m of trajectory i (same shape as the input group). */
  adv: number[][];
  /** True when every advantage of the group is zero (no learning signal): its tokens are not trained on. */
  skipped: boolean;
  /** Reward statistics per role present in the group. */
  roles: Partial<Record<Role, RoleStats>>;
  /** The divisor of each role's centred rewards; 0 for a role whose rewards are all equal (its advantages are 0). */
  divisor: Partial<Record<Role, number>>;
  /**
   * The divisor of a message's deviation from its agent (messageAdvantage): the role's std over the
   * whole step + eps (batchAdvantages; 1 with scale `none`), the group's own divisor when the group
   * is scored alone.
   */
  messageDivisor: Partial<Record<Role, number>>;
}

export interface BatchAdvantages {
  groups: GroupAdvantages[];
  /** Number of groups skipped because all their advantages were zero. */
  skippedGroups: number;
  /** Advantage statistics over agents of non-skipped groups (for logging `adv/*`); zeros when none. */
  stats: { mean: number; std: number; min: number; max: number; agents: number };
}

/** Mean and population std (divide by n) of a non-empty list. */
export function meanPopulationStd(xs: readonly number[]): { mean: number; std: number } {
  if (xs.length === 0) throw new Error('meanPopulationStd: empty list');
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  const variance = xs.reduce((s, x) => s + (x - mean) * (x - mean), 0) / xs.length;
  return { mean, std: Math.sqrt(variance) };
}

export type RewardScale = 'group' | 'batch' | 'none';

/** The divisor of a centred reward, given the role's group statistics. */
export type ScaleOf = (role: Role, group: RoleStats) => number;

/** Advantages of one group; `eps` is train.advEps; `scaleOf` defaults to the group std + eps. */
export function groupAdvantages(
  group: GroupRewards,
  eps: number,
  scaleOf: ScaleOf = (_role, s) => s.std + eps,
): GroupAdvantages {
  if (!(eps > 0)) throw new Error(`groupAdvantages: eps must be > 0, got ${eps}`);
  const byRole = new Map<Role, number[]>();
  group.forEach((traj, i) =>
    traj.forEach((a, m) => {
      if (!Number.isFinite(a.total))
        throw new Error(`groupAdvantages: reward of trajectory ${i} agent ${m} is not finite (${a.total})`);
      const list = byRole.get(a.role) ?? [];
      list.push(a.total);
      byRole.set(a.role, list);
    }),
  );
  const roles: Partial<Record<Role, RoleStats>> = {};
  const constant = new Set<Role>();
  for (const [role, rewards] of byRole) {
    const { mean, std } = meanPopulationStd(rewards);
    roles[role] = { n: rewards.length, mean, std };
    if (Math.max(...rewards) === Math.min(...rewards)) constant.add(role);
  }
  const divisor: Partial<Record<Role, number>> = {};
  for (const [role, s] of Object.entries(roles) as [Role, RoleStats][])
    divisor[role] = constant.has(role) ? 0 : scaleOf(role, s);
  const adv = group.map((traj) => traj.map((a) => scaled(a.role, a.total, roles, divisor)));
  const skipped = adv.every((traj) => traj.every((x) => x === 0));
  return { adv, skipped, roles, divisor, messageDivisor: { ...divisor } };
}

function scaled(
  role: Role,
  reward: number,
  roles: GroupAdvantages['roles'],
  divisor: GroupAdvantages['divisor'],
): number {
  const d = divisor[role];
  const s = roles[role];
  if (!d || !s) return 0;
  return (reward - s.mean) / d;
}

/**
 * The advantage of one message of an agent (credit.messageLevel). Its reward r_t is a share of the
 * agent's credit R = R(i, m) (src/credit/message-shares.ts: sum_t r_t = R), so T r_t, with T the
 * agent's message count, averages to R over the agent's messages:
 *   A(i, m, t) = A(i, m) + (T r_t - R) / messageDivisor_role,
 * whose mean over t is exactly A(i, m). The deviation is scaled by the role's std over the whole
 * step, not the group's: in a group where every trajectory failed, the group std is that of the
 * tool reward alone (0.005-0.02 measured), and dividing a share's deviation (up to 2 beta |R|) by
 * it gave messages advantages of 9-14 against at most 5 for any agent, and runs collapsed to
 * answering "unknown" (docs/results.md). A role with equal rewards in the group keeps 0, as at agent level.
 */
export function messageAdvantage(
  ga: GroupAdvantages,
  role: Role,
  agentReward: number,
  messageReward: number,
  messageCount: number,
): number {
  if (!(Number.isInteger(messageCount) && messageCount >= 1))
    throw new Error(`messageAdvantage: message count must be an integer >= 1, got ${messageCount}`);
  if (!Number.isFinite(messageReward))
    throw new Error(`messageAdvantage: message reward is not finite (${messageReward})`);
  const d = ga.messageDivisor[role];
  if (!ga.divisor[role] || !d) return 0;
  return scaled(role, agentReward, ga.roles, ga.divisor) + (messageCount * messageReward - agentReward) / d;
}

/** The scale rule of `scale` over one step's groups. */
function scaleRule(groups: readonly GroupRewards[], eps: number, scale: RewardScale): ScaleOf {
  if (scale === 'group') return (_role, s) => s.std + eps;
  if (scale === 'none') return () => 1;
  const byRole = new Map<Role, number[]>();
  for (const g of groups) {
    for (const traj of g) {
      for (const a of traj) {
        const xs = byRole.get(a.role) ?? [];
        xs.push(a.total);
        byRole.set(a.role, xs);
      }
    }
  }
  const std = new Map([...byRole].map(([role, xs]) => [role, meanPopulationStd(xs).std]));
  return (role) => (std.get(role) ?? 0) + eps;
}

/** Advantages of every group of a step, with the skipped-group count and advantage stats. */
export function batchAdvantages(
  groups: readonly GroupRewards[],
  eps: number,
  scale: RewardScale = 'group',
): BatchAdvantages {
  const scaleOf = scaleRule(groups, eps, scale);
  // Message deviations: the step std per role (batch), unscaled with `none`; only `group` needs its own rule.
  const stepScale = scale === 'group' ? scaleRule(groups, eps, 'batch') : scaleOf;
  const out = groups.map((g) => {
    const ga = groupAdvantages(g, eps, scaleOf);
    for (const role of Object.keys(ga.roles) as Role[])
      ga.messageDivisor[role] = stepScale(role, ga.roles[role] as RoleStats);
    return ga;
  });
  const live = out.filter((g) => !g.skipped).flatMap((g) => g.adv.flat());
  const stats =
    live.length === 0
      ? { mean: 0, std: 0, min: 0, max: 0, agents: 0 }
      : { ...meanPopulationStd(live), min: Math.min(...live), max: Math.max(...live), agents: live.length };
  return { groups: out, skippedGroups: out.filter((g) => g.skipped).length, stats };
}

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

/** message index -> advantage for the messages of `ct` that carry a share (messageAdvantage above). */
function messageAdvantages(ct: CreditedTrajectory, ga: GroupAdvantages): Map<number, number> {
  const mine = ct.messages ?? [];
  const count = new Map<number, number>();
  for (const m of mine) count.set(m.agent, (count.get(m.agent) ?? 0) + 1);
  const out = new Map<number, number>();
  for (const m of mine) {
    const agent = ct.agents[m.agent];
    if (!agent)
      throw new Error(
        `rl batch: message reward for trajectory ${ct.trajectory.id} names agent ${m.agent}, which it does not have`,
      );
    out.set(m.messageIndex, messageAdvantage(ga, agent.role, agent.total, m.reward, count.get(m.agent) as number));
  }
  return out;
}

/**
 * Advantages per (group, role), then one sequence per generated turn of every non-skipped group,
 * each carrying its agent's advantage (and, with message rewards, each message its own). Turns longer than `maxTokens`
 * (when given) are dropped.
 */
export function buildRlBatch(
  groups: readonly CreditedGroup[],
  enc: ChatEncoder,
  advEps: number,
  maxTokens?: number,
  scale: RewardScale = 'group',
): RlBatch {
  const advantages = batchAdvantages(groups.map(groupRewards), advEps, scale);
  const all: RlSequence[] = [];
  groups.forEach((g, gi) => {
    const ga = advantages.groups[gi];
    if (!ga || ga.skipped) return;
    g.trajectories.forEach((ct, ti) =>
      all.push(
        ...trajectorySequences(ct.trajectory, ga.adv[ti] as number[], enc, {
          messageAdv: ct.messages?.length ? messageAdvantages(ct, ga) : undefined,
        }),
      ),
    );
  });
  const { kept, dropped } = maxTokens ? capLength(all, maxTokens) : { kept: all, dropped: 0 };
  return { sequences: kept, advantages, dropped };
}

const mean = (xs: readonly number[]): number =>
  xs.length === 0 ? Number.NaN : xs.reduce((a, x) => a + x, 0) / xs.length;

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
    for (const part of ['broadcast', 'marginal', 'tool'] as const)
      out[`reward/${part}/${role}`] = mean(mine.map((c) => c.parts[part]));
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
