import { describe, expect, it } from 'vitest';
import { buildProgram } from '../cli/main.ts';
import { MAX_BOOTSTRAP } from '../config/sections/ablation.ts';
import { MAX_THREADS, MAX_VOCAB } from '../config/sections/bounds.ts';
import { MAX_SYNTHETIC_EPISODES } from '../config/sections/data.ts';
import { MAX_EVAL_LIMIT } from '../config/sections/eval.ts';
import { MODEL_DIM_BOUNDS } from '../config/sections/model.ts';
import { UserError } from '../errors.ts';
import {
  auditFlags,
  COMMANDS,
  dataSynthFlags,
  evalFlags,
  generateFlags,
  initModelFlags,
  rolloutFlags,
} from './commands.ts';

/** Flags that name something rather than count it: seeds and ports. */
const NOT_COUNTS = new Set(['seed', 'port']);
/** Capped by the command itself: generate cuts it to the positions left after the prompt, with a warning. */
const CAPPED = new Set(['generate --maxNewTokens']);

describe('numeric flags are bounded', () => {
  it('every int flag of every command declares an upper bound, seeds and ports aside', () => {
    const unbounded = COMMANDS.flatMap((c) =>
      Object.entries(c.flags)
        .filter(
          ([key, f]) =>
            f.type === 'int' && !NOT_COUNTS.has(key) && !CAPPED.has(`${c.name} --${key}`) && f.max === undefined,
        )
        .map(([key]) => `${c.name} --${key}`),
    );
    expect(unbounded).toEqual([]);
  });

  it('a flag that feeds a config count has that key’s bound', () => {
    expect([auditFlags.n.max, rolloutFlags.n.max, dataSynthFlags.n.max]).toEqual([
      MAX_SYNTHETIC_EPISODES,
      MAX_SYNTHETIC_EPISODES,
      MAX_SYNTHETIC_EPISODES,
    ]);
    expect(auditFlags.reps.max).toBe(MAX_BOOTSTRAP);
    expect(evalFlags.limit.max).toBe(MAX_EVAL_LIMIT);
    expect(generateFlags.topK.max).toBe(MAX_VOCAB);
    for (const k of ['layers', 'hidden', 'heads', 'kvHeads', 'intermediate', 'vocab'] as const)
      expect(initModelFlags[k].max, k).toBe(MODEL_DIM_BOUNDS[k]);
    const doctor = COMMANDS.find((c) => c.name === 'doctor');
    expect(doctor?.flags.threads?.max).toBe(MAX_THREADS);
  });

  it.each([
    [['audit', '--n', '1e9'], "audit: --n expects an integer in 1..100000, got '1e9'"],
    [['audit', '--n', '1000000000'], "audit: --n expects an integer in 1..100000, got '1000000000'"],
    [['audit', '--reps', '1e9'], "audit: --reps expects an integer in 1..100000, got '1e9'"],
    [['audit', '--n', '0'], "audit: --n expects an integer in 1..100000, got '0'"],
    [['eval', '--limit', '0'], "eval: --limit expects an integer in 1..10000000, got '0'"],
    [
      ['init-model', '--layers', '5000', '--out', 'x'],
      "init-model: --layers expects an integer in 1..1024, got '5000'",
    ],
    [['data', 'synth', '--max-hops', '5', '--out', 'x'], "data synth: --max-hops expects an integer in 2..4, got '5'"],
    [
      ['generate', '--model', 'm', '--prompt', 'p', '--top-k', '-1'],
      "generate: --top-k expects an integer in 0..4194304, got '-1'",
    ],
    [['worker', '--redis', 'redis://h', '--lock-s', '1e7'], "worker: --lock-s expects a number <= 2147483, got '1e7'"],
  ])('sharp %j is refused as it parses, before the command runs', async (argv, message) => {
    const program = buildProgram();
    const err = await program.parseAsync(argv, { from: 'user' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).message).toBe(message);
  });

  it('names the bounds in the help', () => {
    const audit = buildProgram().commands.find((c) => c.name() === 'audit');
    expect(audit?.helpInformation()).toMatch(/--reps <n>\s+bootstrap resamples of the trajectories \(1\.\.100000\)/);
  });
});
