import { z } from 'zod';

/** `sharp eval` defaults. */
export const evalSection = z
  .strictObject({
    bench: z.string().default('musique').describe('Benchmark name (sharp eval --list).'),
    data: z.string().default('').describe('Benchmark file; empty = the shipped sample in data/<bench>/.'),
    limit: z.number().int().nonnegative().default(0).describe('Episodes evaluated; 0 = all.'),
    agents: z.enum(['multi', 'single', 'direct']).default('multi').describe('multi: planner + workers; single: one agent with tools; direct: no tools.'),
    out: z.string().default('').describe('Output folder; empty = the run folder.'),
    temperature: z.number().nonnegative().default(0).describe('Sampling temperature during eval (0 = greedy); also of the held-out accuracy `sharp train` measures.'),
    seed: z.number().int().nonnegative().default(0).describe('Seed of the sampling RNG when temperature > 0 (the same for every measurement of a run, so before and after RL see the same draws).'),
    heldOutEvery: z.number().int().nonnegative().default(0).describe('`sharp train`: measure held-out accuracy every this many RL steps as well (0 = only before and after RL).'),
    creditReport: z.boolean().default(true).describe('`sharp train`: with the held-out accuracy, replay every held-out trajectory without each worker (leave-one-out) to count helpful / neutral / harmful worker calls.'),
  })
  .describe('Evaluation.');
