import type { AblationMethod } from '../src/config/sections/ablation.ts';
import type { AccuracyResult } from '../src/eval/held-out-accuracy.ts';
import type { RunOutcome } from '../src/report/ablation.ts';

/** A finished ablation run of one step, one group and unit seconds, with the given test measurements. */
export const runOutcome = (
  method: AblationMethod,
  seed: number,
  before: AccuracyResult,
  after: AccuracyResult,
): RunOutcome => ({
  method,
  seed,
  dir: `${method}-s${seed}`,
  before,
  after,
  curve: [],
  steps: 1,
  generatedTokens: 0,
  replays: 0,
  zeroGroups: 0,
  groups: 1,
  rlSeconds: 1,
  creditSeconds: 0,
  wallSeconds: 1,
});
