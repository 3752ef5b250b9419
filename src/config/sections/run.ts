import { z } from 'zod';

/** Where a run writes, how it is seeded, and which tensor backend it uses. */
export const runSection = z
  .strictObject({
    name: z.string().min(1).default('run').describe('Run name; the run folder is runs/<name>-<timestamp>/.'),
    dir: z.string().default('runs').describe('Parent folder of run folders.'),
    seed: z.number().int().nonnegative().default(0).describe('Seed of the only RNG (src/random/rng.ts); same seed, same run.'),
    backend: z
      .enum(['auto', 'tensorflow', 'wasm', 'cpu'])
      .default('auto')
      .describe('Tensor backend: auto tries tfjs-node-gpu, tfjs-node, wasm, cpu in that order.'),
    threads: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe('wasm thread count; 0 = all cores. tfjs disables wasm threads in Node, so >1 is recorded but inert there.'),
    logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error']).default('info').describe('Minimum level written to log.jsonl and the terminal.'),
  })
  .describe('Run folder, seed, backend and logging.');
