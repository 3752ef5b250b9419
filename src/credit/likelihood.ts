/**
 * Stage "evaluate" of credit for the likelihood value (credit.value likelihood; docs/architecture.md,
 * "Credit"): the value tables of a group plan from the scored contexts instead of replays. `scored[i]`
 * is v_lik of `plan.scores[i]` (likelihood-scorer.ts). Nothing is sampled, so there is no replay noise:
 * with nothing masked every coalition's context is the same and every Delta and phi is exactly 0.
 */
import { recordedTables, type EvaluateStats, type ValueTable } from './counterfactual.ts';
import type { GroupPlan } from './plan.ts';
import type { OutcomeFn } from './outcome.ts';

export function evaluateLikelihoods(
  plan: GroupPlan,
  scored: readonly number[],
  outcome: OutcomeFn,
): { tables: ValueTable[]; stats: EvaluateStats } {
  if (scored.length !== plan.scores.length)
    throw new Error(`likelihood scorer returned ${scored.length} values for ${plan.scores.length} contexts`);
  const tables = recordedTables(plan, outcome);
  plan.values.forEach((key, i) => {
    const v = scored[i] as number;
    if (!Number.isFinite(v)) throw new Error(`likelihood: value ${i} of episode ${plan.episode.id} is ${v}`);
    const table = tables[key.t] as ValueTable;
    if ('plannerRepair' in key) throw new Error('likelihood: a planner repair in a likelihood plan');
    if ('readThrough' in key) {
      table.readThrough ??= new Array<number>(table.k + 1).fill(Number.NaN);
      table.readThrough[key.readThrough] = v;
      return;
    }
    table.values.set(key.coalition, v);
  });
  return {
    tables,
    stats: { runnerCalls: 0, replayItems: 0, cachedCoalitions: plan.repeated },
  };
}

/** The sequential form's gain of each worker: v_lik just after its report is read minus just before. */
export function sequentialGains(readThrough: readonly number[]): number[] {
  return readThrough.slice(1).map((after, m) => after - (readThrough[m] as number));
}

/**
 * A likelihood marginal (nats) as a reward part: tanh(Delta / scale), bounded in (-1, 1) like an
 * outcome marginal, the same sign, and monotone, so the audit's AUROC is the raw Delta's.
 */
export function squashMarginal(delta: number, scale: number): number {
  return Math.tanh(delta / scale);
}
