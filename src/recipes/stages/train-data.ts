import { existsSync } from 'node:fs';
import type { Config } from '../../config/schema.ts';
import type { Episode } from '../../data/episode.ts';
import { generateSynth } from '../../data/synth/generate.ts';
import { toEpisode } from '../../data/synth/record.ts';
import { getBenchmark } from '../../eval/benchmarks.ts';
import { UserError } from '../../errors.ts';

/**
 * Training and held-out episodes of `sharp train`. Synthetic, worlds = fresh (default): each episode
 * has its own world; held-out worlds draw their names from a part of the name space that training
 * worlds never use (names.ts namePartition). With a name pool (data.synthetic.namePool > 0) that
 * holds for people and companies (two-word names) only: single-word names (cities, countries,
 * languages) come from the one shared pool, so many held-out answers are words training also uses.
 * Synthetic, worlds = shared: ONE call of the
 * generator with one seed, split into train + held-out, so both come from the same world (two seeds
 * would give two worlds, and held-out questions about people the model never read of). The
 * generator's records are distinct, so no held-out question is also a training question.
 * Benchmark sources (and `jsonl`, the user's own questions): the file at data.path through the
 * benchmark reader; its last data.benchmarkHeldOut episodes are held out.
 */
export interface TrainData {
  train: Episode[];
  heldOut: Episode[];
}

/** The held-out episodes split in two: validation (for every choice) and test (reported once). */
export interface HeldOutSplits {
  validation: Episode[];
  test: Episode[];
}

/** The first floor(n x share) held-out episodes are validation, the rest test (never empty). */
/** The split measured before and after RL (eval.finalSplit): test, or validation for a sweep that chooses. */
export function finalSplit(splits: HeldOutSplits, which: 'test' | 'validation'): Episode[] {
  return which === 'test' ? splits.test : splits.validation;
}

export function heldOutSplits(heldOut: readonly Episode[], validationShare: number): HeldOutSplits {
  const v = Math.floor(heldOut.length * validationShare);
  if (heldOut.length - v < 1)
    throw new UserError(
      `eval.validationShare ${validationShare} leaves no test episodes of ${heldOut.length} held out`,
    );
  return { validation: heldOut.slice(0, v), test: heldOut.slice(v) };
}

export function loadTrainData(d: Config['data']): TrainData {
  if (d.source === 'synthetic') {
    const s = d.synthetic;
    const mix = { shapes: s.shapes, compareItems: s.compareItems, misleadingRate: s.misleading.rate };
    if (s.worlds === 'fresh') {
      const common = {
        seed: s.seed,
        minHops: s.minHops,
        maxHops: s.maxHops,
        world: s.world,
        worlds: 'fresh' as const,
        namePool: s.namePool,
        ...mix,
      };
      return {
        train: generateSynth({ ...common, n: s.train, names: 'train' }).map(toEpisode),
        heldOut: generateSynth({ ...common, n: s.heldOut, names: 'held-out' }).map(toEpisode),
      };
    }
    const all = generateSynth({
      seed: s.seed,
      n: s.train + s.heldOut,
      minHops: s.minHops,
      maxHops: s.maxHops,
      world: s.world,
      ...mix,
    }).map(toEpisode);
    return { train: all.slice(0, s.train), heldOut: all.slice(s.train) };
  }
  if (!existsSync(d.path)) throw new UserError(`data.path not found: ${d.path}`);
  let all: Episode[];
  try {
    all = getBenchmark(d.source).read(d.path);
  } catch (err) {
    // The user format's errors already name the file and line (FILE:LINE: reason).
    if (err instanceof UserError) throw err;
    throw new UserError(`data.path ${d.path}: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  }
  const answerable = all.filter((e) => e.answerable !== false && e.answers.length > 0);
  const k = Math.min(d.benchmarkHeldOut, Math.floor(answerable.length / 2));
  if (answerable.length - k < 1) throw new UserError(`data.path ${d.path}: no answerable episodes to train on`);
  return { train: answerable.slice(0, answerable.length - k), heldOut: answerable.slice(answerable.length - k) };
}

/**
 * The first n training episodes of the configured data, as `sharp train` loads them (the same worlds
 * and names); a synthetic source generates only those n. `what` prefixes a data error (the command).
 */
export function firstTrainEpisodes(d: Config['data'], n: number, what: string): Episode[] {
  try {
    if (d.source === 'synthetic')
      return loadTrainData({ ...d, synthetic: { ...d.synthetic, train: n, heldOut: 1 } }).train;
    return loadTrainData(d).train.slice(0, n);
  } catch (err) {
    if (err instanceof UserError) throw new UserError(`${what}: ${err.message}`);
    throw err;
  }
}
