import { claimOutFile, recordOutFile } from '../fs/output-guard.ts';
import { UserError } from '../errors.ts';
import { generateSynth } from '../data/synth/generate.ts';
import { writeJsonlAtomic } from '../fs/atomic.ts';
import { MAX_SYNTHETIC_EPISODES } from '../config/sections/data.ts';
import { createProgress } from '../run/progress.ts';
import type { DataSynthFlags } from './commands.ts';

/**
 * `sharp data synth --seed S --n N --out FILE [--min-hops 2 --max-hops 4] [--worlds fresh]
 * [--comparison 1 --aggregation 1] [--misleading 0.5]`: writes N synthetic multi-hop records in the
 * MuSiQue format as JSONL, atomically, in the mix of question shapes the weights give (chain alone:
 * the chain-only generator), optionally with planted wrong claims. Deterministic per seed.
 * Flags: src/recipes/commands.ts.
 */

const PROGRESS_EVERY = 1000;

export async function run(opts: DataSynthFlags): Promise<void> {
  const path = claimOutFile(opts.out, { command: 'data synth', flag: 'data synth: --out', force: opts.force });
  const { seed, n, minHops, maxHops } = opts;
  if (seed < 0) throw new UserError(`data synth: --seed must be >= 0, got ${seed}`);
  if (n < 1 || n > MAX_SYNTHETIC_EPISODES)
    throw new UserError(`data synth: --n must be in 1..${MAX_SYNTHETIC_EPISODES}, got ${n}`);
  for (const [flag, v] of [
    ['--min-hops', minHops],
    ['--max-hops', maxHops],
  ] as const) {
    if (v < 2 || v > 4) throw new UserError(`data synth: ${flag} must be 2, 3 or 4, got ${v}`);
  }
  if (minHops > maxHops)
    throw new UserError(`data synth: --min-hops (${minHops}) is greater than --max-hops (${maxHops})`);
  const { chain, comparison, aggregation, misleading } = opts;
  for (const [flag, v] of [
    ['--chain', chain],
    ['--comparison', comparison],
    ['--aggregation', aggregation],
  ] as const) {
    if (v < 0) throw new UserError(`data synth: ${flag} must be >= 0, got ${v}`);
  }
  if (chain + comparison + aggregation <= 0)
    throw new UserError('data synth: at least one of --chain, --comparison, --aggregation must be > 0');
  if (misleading < 0 || misleading > 1)
    throw new UserError(`data synth: --misleading must be in [0, 1], got ${misleading}`);
  let records;
  // Long runs (about 10 ms a record) report progress every PROGRESS_EVERY records on stderr.
  const progress =
    n >= PROGRESS_EVERY ? createProgress({ total: n, done: 0, label: 'data synth', unit: 'records' }) : undefined;
  let reported = 0;
  const onRecord = (done: number): void => {
    if (!progress || (done - reported < PROGRESS_EVERY && done < n)) return;
    progress.tick(done - reported);
    reported = done;
  };
  try {
    records = generateSynth({
      seed,
      n,
      minHops,
      maxHops,
      worlds: opts.worlds,
      shapes: { chain, comparison, aggregation },
      misleadingRate: misleading,
      onRecord,
    });
  } catch (e) {
    // The generator's own errors (e.g. more records than distinct questions) are about the flags.
    throw new UserError(`data synth: ${(e as Error).message.replace(/^synth: /, '')}`);
  } finally {
    progress?.stop();
  }
  writeJsonlAtomic(path, records);
  recordOutFile(path, 'data synth');
  const shapes = new Map<string, number>();
  for (const r of records) {
    const shape = r.id.split('__')[0] as string;
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
  }
  const mix = [...shapes.entries()]
    .sort()
    .map(([s, c]) => `${s} ${c}`)
    .join(', ');
  process.stdout.write(`data synth: wrote ${records.length} records (${mix}) to ${path}\n`);
}
