import type { Episode } from '../data/episode.ts';
import { Rng } from '../random/rng.ts';
import { creditSeed, groupSeed } from '../random/step-seeds.ts';
import type { Trajectory } from '../rollout/types.ts';
import { type AssignOptions, assignCredit } from './assign.ts';
import type { CreditConfig } from './config.ts';
import { evaluateReplays, type ValueTable } from './counterfactual.ts';
import type { CreditedGroup } from './credited.ts';
import type { PreferencePair } from './first-error.ts';
import { type GroupPlan, planReplays } from './plan.ts';
import { successFunction } from './success.ts';

/**
 * The credit stages over a whole RL step (every question's group): the plan of each group draws
 * from its own seeded stream (random/step-seeds.ts), so a group's plan is the same in this process
 * and on a worker; each group's values come from its own replays.
 */

/** Stage "plan replays" of a step: one plan per group, in question order. */
export function planStep(groups: readonly { episode: Episode; trajectories: readonly Trajectory[] }[], cfg: CreditConfig, stepSeed: number): GroupPlan[] {
  return groups.map((g, q) => planReplays(g.trajectories, g.episode, cfg, { rng: new Rng(creditSeed(groupSeed(stepSeed, q))) }));
}

export interface StepCredit {
  groups: CreditedGroup[];
  pairs: PreferencePair[];
  /** Value tables per group (for the viewer's record). */
  tables: ValueTable[][];
  replayItems: number;
  cachedCoalitions: number;
}

/** Stage "assign credit" of a step: values from each group's replays, then each agent's credit. */
export async function assignStep(plans: readonly GroupPlan[], replayed: readonly (readonly Trajectory[])[], cfg: CreditConfig, opts: AssignOptions): Promise<StepCredit> {
  if (replayed.length !== plans.length) throw new Error(`credit: ${replayed.length} groups of replays for ${plans.length} plans`);
  const success = successFunction(cfg.success, { f1Threshold: cfg.f1Threshold });
  const out: StepCredit = { groups: [], pairs: [], tables: [], replayItems: 0, cachedCoalitions: 0 };
  for (const [q, plan] of plans.entries()) {
    const { tables, stats } = evaluateReplays(plan, replayed[q], success);
    const assigned = await assignCredit(plan, tables, cfg, opts);
    out.groups.push({ trajectories: assigned.credited });
    out.pairs.push(...assigned.pairs);
    out.tables.push(tables);
    out.replayItems += stats.replayItems;
    out.cachedCoalitions += stats.cachedCoalitions;
  }
  return out;
}
