/**
 * What evaluation uses of the credit module (`sharp eval --credit`: recipes/eval.ts, eval/run/).
 * `computeCredits` is the one stage call per group. The trainer's collect stage imports the modules
 * it needs directly (train/grpo/collect.ts).
 */
export { computeCredits, type CreditConfig } from './compute.ts';
export { engineReplayRunner } from './engine-adapters.ts';
export { judgeOptions } from './judge-options.ts';
export type { CandidateScorer } from './judges/index.ts';
export { lmCandidateScorer } from './judges/lm-scorer.ts';
export { creditReport, type CreditReport } from './report.ts';
export { parsePreferencePair, writePreferencePairs } from './pairs-jsonl.ts';
export type { PreferencePair } from './first-error.ts';
