import { z } from 'zod';

/**
 * `sharp ablate`: the SHARP ablation (docs/results.md). Every method trains from the same starting
 * checkpoint (model.path) with the same RL budget (train.*), data and held-out set, once per seed.
 */
export const ABLATION_METHODS = ['none', 'loo', 'shapley', 'single'] as const;
export type AblationMethod = (typeof ABLATION_METHODS)[number];

export const ablationSection = z
  .strictObject({
    methods: z
      .array(z.enum(ABLATION_METHODS))
      .min(1)
      .default([...ABLATION_METHODS])
      .describe('none: broadcast-only multi-agent GRPO (as MATPO trains); loo: SHARP leave-one-out credit; shapley: Shapley credit; single: single-agent GRPO (one agent with the worker tools answers alone, no delegation).'),
    seeds: z.array(z.number().int().nonnegative()).min(1).default([0, 1, 2]).describe('run.seed of each run (sampling and data order); the held-out set and its sampling seed stay fixed.'),
    out: z.string().default('').describe('Ablation folder; empty = <run.dir>/<run.name> (runs inside are resumed, finished ones skipped).'),
  })
  .describe('The SHARP ablation (`sharp ablate`).');
