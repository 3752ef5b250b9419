import { z } from 'zod';
import { MAX_THREADS } from './bounds.ts';

/** Longest run name: with `-20261202T073116Z-10000` the folder name stays under 255 bytes. */
const MAX_RUN_NAME = 200;

/**
 * Why `name` cannot be a run name, or null. The run folder is `<run.dir>/<name>-<stamp>`, so the
 * name must be one path segment: a separator would make sub-folders (`a/b`) or leave run.dir
 * (`../escape`).
 */
function runNameProblem(name: string): string | null {
  if (/[/\\]/.test(name))
    return `'${name.slice(0, 60)}' is not one folder name (no / or \\; the run folder is <run.dir>/<name>-<timestamp>)`;
  if (name === '.' || name === '..') return `'${name}' is not a folder name`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'a run name may not hold control characters';
  if (Buffer.byteLength(name) > MAX_RUN_NAME)
    return (
      `${Buffer.byteLength(name)} bytes; at most ${MAX_RUN_NAME} (the run folder adds -<timestamp> and the file ` +
      `system allows 255 bytes per name)`
    );
  return null;
}

/** Where a run writes, how it is seeded, and which tensor backend it uses. */
export const runSection = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(
        MAX_RUN_NAME,
        `at most ${MAX_RUN_NAME} characters (the run folder adds -<timestamp> and the file system allows 255 ` +
          `bytes per name)`,
      )
      .refine((n) => runNameProblem(n) === null, {
        error: (i) => runNameProblem(String(i.input)) ?? 'invalid run name',
      })
      .default('run')
      .describe(
        `Run name, one folder name segment (no / or \\, not . or .., no control characters, at most ` +
          `${MAX_RUN_NAME} characters); the run folder is runs/<name>-<timestamp>/.`,
      ),
    dir: z.string().default('runs').describe('Parent folder of run folders.'),
    seed: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe('Seed of the only RNG (src/random/rng.ts); same seed, same run.'),
    backend: z
      .enum(['auto', 'tensorflow', 'native', 'wasm', 'cpu'])
      .default('auto')
      .describe(
        'Tensor backend: auto tries tfjs-node-gpu, tfjs-node, wasm, native, cpu in that order, with native (tensors ' +
          'in ordinary memory, no 4 GiB heap) ahead of wasm when the model would not fit the wasm heap.',
      ),
    threads: z
      .number()
      .int()
      .nonnegative()
      .max(MAX_THREADS)
      .default(0)
      .describe(
        `wasm thread count; 0 = all cores (at most ${MAX_THREADS}, as doctor --threads). tfjs disables wasm ` +
          'threads in Node, so >1 is recorded but inert there.',
      ),
    logLevel: z
      .enum(['trace', 'debug', 'info', 'warn', 'error'])
      .default('info')
      .describe('Minimum level written to log.jsonl and the terminal.'),
  })
  .describe('Run folder, seed, backend and logging.');
