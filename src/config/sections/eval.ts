import { z } from 'zod';

/** `sharp eval` defaults (DESIGN.md section 7). */
export const evalSection = z
  .strictObject({
    bench: z.string().default('musique').describe('Benchmark name (sharp eval --list).'),
    data: z.string().default('').describe('Benchmark file; empty = the shipped sample in data/<bench>/.'),
    limit: z.number().int().nonnegative().default(0).describe('Episodes evaluated; 0 = all.'),
    agents: z.enum(['multi', 'single', 'direct']).default('multi').describe('multi: planner + workers; single: one agent with tools; direct: no tools.'),
    out: z.string().default('').describe('Output folder; empty = the run folder.'),
    temperature: z.number().nonnegative().default(0).describe('Sampling temperature during eval (0 = greedy).'),
  })
  .describe('Evaluation.');
