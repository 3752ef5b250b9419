import { z } from 'zod';

/**
 * `sharp ablate`: the SHARP ablation (docs/results.md). Every method trains from the same starting
 * checkpoint (model.path) with the same RL budget (train.*), data and held-out set, once per seed.
 */
const ABLATION_METHODS = [
  'broadcast',
  'matpo',
  'loo',
  'shapley',
  'loo-resample',
  'loo-repair',
  'loo-repair-workers',
  'loo-likelihood',
  'shapley-likelihood',
  'loo-likelihood-seq',
  'oracle',
  'single',
] as const;
export type AblationMethod = (typeof ABLATION_METHODS)[number];
/**
 * The arms run when the config names none: the chain-world comparison (resample is for worlds with parallel workers).
 */
const DEFAULT_METHODS: AblationMethod[] = ['broadcast', 'matpo', 'loo', 'shapley', 'single'];

/** The lists that are sets: a repeated entry would run and report one arm or seed twice. */
const distinct = (xs: readonly unknown[]): boolean => new Set(xs).size === xs.length;

/**
 * Most bootstrap resamples (ablation.bootstrap, `sharp audit --reps`): each resamples every question
 * or trajectory, so a count nobody means runs for hours; the defaults are 2,000 and 4,000.
 */
export const MAX_BOOTSTRAP = 100_000;

export const ablationSection = z
  .strictObject({
    methods: z
      .array(z.enum(ABLATION_METHODS))
      .min(1)
      .refine(distinct, 'each method at most once (a repeated arm would be counted twice)')
      .default(DEFAULT_METHODS)
      .describe(
        'The arms, differing only in the credit term (credit.method): broadcast: the accuracy reward, identical for ' +
          "every agent; matpo: MATPO's reward (accuracy + 0.1 x tool-format validity of the trajectory), " +
          'broadcast; loo: SHARP leave-one-out credit; shapley: SHARP Shapley credit; loo-resample: leave-one-out ' +
          'credit with credit.counterfactual resample; loo-repair: leave-one-out credit with credit.counterfactual ' +
          'repair (gold sub-answers); loo-repair-workers: the same with the planner left out of the blame ' +
          '(credit.repairPlanner false); loo-likelihood, shapley-likelihood, loo-likelihood-seq: credit.value ' +
          'likelihood with form coalition (LOO, Shapley) or sequential; oracle: the CEILING credit.method ' +
          'oracle (1 for a right report, 0 otherwise), not a method; single: single-agent GRPO (one agent with ' +
          'the worker tools answers alone) on the accuracy reward.',
      ),
    seeds: z
      .array(z.number().int().nonnegative())
      .min(1)
      .max(1000, 'at most 1000 seeds (each is a whole RL run per arm)')
      .refine(distinct, 'each seed at most once (a repeated seed would be counted twice)')
      .default([0, 1, 2, 3, 4])
      .describe(
        'run.seed of each run (rollout sampling and data order; every arm of one seed starts from the same first ' +
          'batch); the test split and its sampling seed stay fixed.',
      ),
    bootstrap: z
      .number()
      .int()
      .min(100)
      .max(MAX_BOOTSTRAP)
      .default(4000)
      .describe('Bootstrap resamples of the paired differences between arms (questions and seeds resampled).'),
    out: z
      .string()
      .default('')
      .describe('Ablation folder; empty = <run.dir>/<run.name> (runs inside are resumed, finished ones skipped).'),
  })
  .describe('The SHARP ablation (`sharp ablate`).');
