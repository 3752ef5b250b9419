import { COUNTERFACTUALS, type Counterfactual } from '../../config/sections/credit.ts';
import { computeCredits, type CreditConfig } from '../../credit/compute.ts';
import type { ReplayRunner } from '../../credit/counterfactual.ts';
import type { Episode } from '../../data/episode.ts';
import type { Trajectory } from '../../rollout/types.ts';
import type { LikelihoodScorer } from '../../credit/likelihood-scorer.ts';
import { batchedRunner, batchedScorer } from './batched-runner.ts';
import type { WorkerCall } from './labels.ts';

/**
 * The credits the audit compares on the same trajectories (docs/credit-audit.md): SHARP's
 * leave-one-out credit under every counterfactual of credit.counterfactual (mask, resample, repair)
 * over the outcome value; the likelihood value (credit.value likelihood) as LOO, Shapley and the
 * sequential gain; and the oracle, a ceiling rather than a credit (the rule judge's own right / wrong
 * label as the worker's reward: its AUROC is 1 and it never blames by construction).
 */
export interface AuditArm {
  name: string;
  method: 'loo' | 'shapley' | 'oracle';
  counterfactual: Counterfactual;
  /** credit.value; absent: outcome. */
  value?: 'likelihood';
  /** credit.likelihood.form of a likelihood arm. */
  form?: 'coalition' | 'sequential';
  /** A ceiling, not a method: labelled so wherever it is reported. */
  ceiling: boolean;
}

export const AUDIT_ARMS: readonly AuditArm[] = [
  ...COUNTERFACTUALS.map((c): AuditArm => ({ name: c, method: 'loo', counterfactual: c, ceiling: false })),
  { name: 'likelihood', method: 'loo', counterfactual: 'mask', value: 'likelihood', form: 'coalition', ceiling: false },
  {
    name: 'likelihood-shapley',
    method: 'shapley',
    counterfactual: 'mask',
    value: 'likelihood',
    form: 'coalition',
    ceiling: false,
  },
  {
    name: 'likelihood-seq',
    method: 'loo',
    counterfactual: 'mask',
    value: 'likelihood',
    form: 'sequential',
    ceiling: false,
  },
  { name: 'oracle', method: 'oracle', counterfactual: 'mask', ceiling: true },
];

/**
 * The credit config of an arm: the run's credit section with the arm's method and counterfactual, without judge-driven
 * extras.
 */
export function armConfig(base: CreditConfig, arm: AuditArm): CreditConfig {
  return {
    ...base,
    method: arm.method,
    counterfactual: arm.counterfactual,
    value: arm.value ?? 'outcome',
    likelihood: { ...base.likelihood, form: arm.form ?? base.likelihood.form },
    messageLevel: false,
    failurePairs: false,
  };
}

export interface ArmCredit {
  /** credits[i]: the worker marginal of calls[i] (LOO Delta, Shapley phi, a gain in nats; the oracle's 1 / 0). */
  credits: number[];
  /** Mean replay noise floor over the trajectories (credit.noise; 0 for the oracle, which replays nothing). */
  noise: number;
  /** Replayed trajectories. */
  replays: number;
  seconds: number;
}

/**
 * Credit of every trajectory (a group of one each, with its episode) under `cfg`, `batch`
 * trajectories' replays per engine run; the credit of each labelled call picked out of it.
 * `onBatch` is told how many trajectories each batch finished.
 */
export async function armCredit(
  trajs: readonly Trajectory[],
  episodes: readonly Episode[],
  calls: readonly WorkerCall[],
  cfg: CreditConfig,
  runner: ReplayRunner,
  batch: number,
  onBatch?: (n: number) => void,
  scorer?: LikelihoodScorer,
): Promise<ArmCredit> {
  if (episodes.length !== trajs.length)
    throw new Error(`audit: ${episodes.length} episodes for ${trajs.length} trajectories`);
  if (!Number.isInteger(batch) || batch < 1) throw new Error(`audit: batch must be a positive integer (got ${batch})`);
  const t0 = performance.now();
  const batched = batchedRunner(runner);
  const scoring = scorer ? batchedScorer(scorer) : undefined;
  const marginals: (readonly number[])[] = [];
  let noise = 0;
  let replays = 0;
  for (let start = 0; start < trajs.length; start += batch) {
    const part = trajs.slice(start, start + batch);
    const results = await Promise.all(
      part.map((t, i) =>
        computeCredits([t], episodes[start + i] as Episode, batched, cfg, scorer ? { scorer: scoring } : {}),
      ),
    );
    for (const r of results) {
      const c = r.credited[0];
      if (!c) throw new Error('audit: credit returned no trajectory');
      // Likelihood arms: the gains in nats (phi, Delta), not their squashed reward parts; the same order.
      marginals.push(cfg.value === 'likelihood' ? (c.credit.phi ?? c.credit.deltas) : c.credit.workerMarginal);
      noise += c.credit.noise;
      replays += r.stats.replayItems;
    }
    onBatch?.(part.length);
  }
  const credits = calls.map((c) => {
    const m = marginals[c.trajectory]?.[c.delegation];
    if (m === undefined)
      throw new Error(`audit: no credit for delegation ${c.delegation} of trajectory ${c.trajectoryId}`);
    return m;
  });
  return {
    credits,
    noise: trajs.length === 0 ? 0 : noise / trajs.length,
    replays,
    seconds: (performance.now() - t0) / 1000,
  };
}
