import type { Role } from '../rollout/types.ts';
import type { AgentCredit } from './reward.ts';

/**
 * Credit report per run or step (SHARP's helpful / harmful analysis): fractions of
 * worker calls whose LOO Delta is > 0, = 0, < 0, mean credit per role, and the largest Shapley
 * efficiency residual (should be ~1e-16; anything larger is a bug in the value tables).
 */
export interface TrajectoryCreditSummary {
  trajectoryId: string;
  /** LOO Delta per worker (by delegation). */
  deltas: readonly number[];
  /** |sum phi - (v(N) - v(empty))| when Shapley was computed. */
  efficiencyResidual?: number;
  /** R(tau), the recorded outcome (absent in summaries written before it was kept). */
  success?: number;
  /** Mean |v_r(N) - R(tau)| over the full coalition's replays (counterfactual.ts ValueTable.noise). */
  noise?: number;
}

export interface CreditReport {
  workerCalls: number;
  helpful: number;
  neutral: number;
  harmful: number;
  /** Mean `total` per role (NaN-free: roles with no agent are absent). */
  meanCredit: Partial<Record<Role, number>>;
  /** Mean marginal part per role. */
  meanMarginal: Partial<Record<Role, number>>;
  /** null when no Shapley value was computed. */
  maxEfficiencyResidual: number | null;
  /**
   * Share of replayed trajectories (with workers) whose full-coalition replays disagree with the
   * recorded outcome (mean |v_r(N) - R|): the floor under which a Delta is replay noise; null
   * without replays.
   */
  noiseFloor: number | null;
  /** Share of worker calls with a non-zero Delta, in successful and in failed trajectories (null: none). */
  nonzeroInSuccess: number | null;
  nonzeroInFailure: number | null;
}

/** Deltas closer to 0 than this count as neutral (float noise of averaged replays). */
const NEUTRAL_EPS = 1e-12;

export function creditReport(
  summaries: readonly TrajectoryCreditSummary[],
  credits: readonly AgentCredit[],
): CreditReport {
  let helpful = 0;
  let neutral = 0;
  let harmful = 0;
  let maxResidual: number | null = null;
  let noise = 0;
  let replayed = 0;
  const nonzero = { success: { n: 0, calls: 0 }, failure: { n: 0, calls: 0 } };
  for (const s of summaries) {
    for (const d of s.deltas) {
      if (d > NEUTRAL_EPS) helpful += 1;
      else if (d < -NEUTRAL_EPS) harmful += 1;
      else neutral += 1;
    }
    if (s.efficiencyResidual !== undefined) maxResidual = Math.max(maxResidual ?? 0, s.efficiencyResidual);
    if (s.deltas.length > 0 && s.noise !== undefined) {
      noise += s.noise;
      replayed += 1;
    }
    if (s.success !== undefined) {
      const bucket = s.success > 0 ? nonzero.success : nonzero.failure;
      bucket.calls += s.deltas.length;
      bucket.n += s.deltas.filter((d) => Math.abs(d) > NEUTRAL_EPS).length;
    }
  }
  const calls = helpful + neutral + harmful;
  const frac = (n: number): number => (calls === 0 ? 0 : n / calls);
  const meanBy = (pick: (c: AgentCredit) => number): Partial<Record<Role, number>> => {
    const acc = new Map<Role, { sum: number; n: number }>();
    for (const c of credits) {
      const a = acc.get(c.role) ?? { sum: 0, n: 0 };
      a.sum += pick(c);
      a.n += 1;
      acc.set(c.role, a);
    }
    const out: Partial<Record<Role, number>> = {};
    for (const [role, a] of acc) out[role] = a.sum / a.n;
    return out;
  };
  return {
    workerCalls: calls,
    helpful: frac(helpful),
    neutral: frac(neutral),
    harmful: frac(harmful),
    meanCredit: meanBy((c) => c.total),
    meanMarginal: meanBy((c) => c.parts.marginal),
    maxEfficiencyResidual: maxResidual,
    noiseFloor: replayed === 0 ? null : noise / replayed,
    nonzeroInSuccess: nonzero.success.calls === 0 ? null : nonzero.success.n / nonzero.success.calls,
    nonzeroInFailure: nonzero.failure.calls === 0 ? null : nonzero.failure.n / nonzero.failure.calls,
  };
}

/** Namespaced scalars for the metrics log (`credit/helpful`, `credit/mean/planner`, ...). */
export function reportMetrics(r: CreditReport): Record<string, number> {
  const out: Record<string, number> = {
    'credit/worker_calls': r.workerCalls,
    'credit/helpful': r.helpful,
    'credit/neutral': r.neutral,
    'credit/harmful': r.harmful,
  };
  for (const [role, v] of Object.entries(r.meanCredit)) out[`credit/mean/${role}`] = v;
  for (const [role, v] of Object.entries(r.meanMarginal)) out[`credit/marginal/${role}`] = v;
  if (r.maxEfficiencyResidual !== null) out['credit/shapley_residual_max'] = r.maxEfficiencyResidual;
  if (r.noiseFloor !== null) out['credit/noise_floor'] = r.noiseFloor;
  if (r.nonzeroInSuccess !== null) out['credit/nonzero_success'] = r.nonzeroInSuccess;
  if (r.nonzeroInFailure !== null) out['credit/nonzero_failure'] = r.nonzeroInFailure;
  return out;
}
