import { z } from 'zod';
import { count, MAX_STEPS } from './bounds.ts';

/**
 * Most episodes one eval takes ("the first n"; eval.limit and `sharp eval --limit`): benchmark files
 * hold at most 2^29 bytes, far fewer questions than this.
 */
export const MAX_EVAL_LIMIT = 10_000_000;

/** `sharp eval` defaults. */
export const evalSection = z
  .strictObject({
    bench: z.string().default('musique').describe('Benchmark name (sharp eval --list).'),
    data: z.string().default('').describe('Benchmark file; empty = the shipped sample in data/<bench>/.'),
    limit: count(0, MAX_EVAL_LIMIT, 0, 'Episodes evaluated; 0 = all.'),
    agents: z
      .enum(['multi', 'single', 'direct'])
      .default('multi')
      .describe('multi: planner + workers; single: one agent with tools; direct: no tools.'),
    out: z.string().default('').describe('Output folder; empty = the run folder.'),
    temperature: z
      .number()
      .nonnegative()
      .default(0)
      .describe('Sampling temperature during eval (0 = greedy); also of the held-out accuracy `sharp train` measures.'),
    seed: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe(
        'Seed of the sampling RNG when temperature > 0 (the same for every measurement of a run, so before and ' +
          'after RL see the same draws).',
      ),
    heldOutEvery: count(
      0,
      MAX_STEPS,
      0,
      '`sharp train`: measure accuracy on the validation split every this many RL steps (0 = never; the test ' +
        'split is measured only before and after RL).',
    ),
    validationShare: z
      .number()
      .min(0)
      .max(0.9)
      .default(0.5)
      .describe(
        'Share of the held-out episodes (the first ones) that form the validation split: choices (lr, steps, ' +
          'checkpoints, SFT stages) and the curves during RL are measured there. The rest is the test split, ' +
          'measured before and after RL and reported once.',
      ),
    finalSplit: z
      .enum(['test', 'validation'])
      .default('test')
      .describe(
        'The held-out split measured before and after RL (`sharp train`, `sharp ablate`): test, reported once; or ' +
          'validation, for a sweep that makes a choice (weights, lr) without reading the test split.',
      ),
    testSamples: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe(
        'Sampled trajectories per test question (k; 1 when eval.temperature is 0, as greedy samples are all the ' +
          'same): test accuracy is the mean over n questions x k samples, and paired comparisons average each ' +
          'question over its k samples.',
      ),
    creditReport: z
      .boolean()
      .default(true)
      .describe(
        '`sharp train`: with the held-out accuracy, replay every held-out trajectory without each worker ' +
          '(leave-one-out) to count helpful / neutral / harmful worker calls.',
      ),
  })
  .describe('Evaluation.');
