/**
 * What evaluation uses of the credit module (`sharp eval --credit`: recipes/eval.ts, eval/run/).
 * The stages themselves (plan.ts, counterfactual.ts evaluateReplays, assign.ts) are imported where
 * they run.
 */
export type { CreditConfig } from './config.ts';
export { engineReplayRunner, replaySettings } from './engine-adapters.ts';
export { judgeOptions } from './judge-options.ts';
export type { CandidateScorer } from './judges/index.ts';
export { lmCandidateScorer } from './judges/lm-scorer.ts';
export { creditReport, type CreditReport } from './report.ts';
export { parsePreferencePair, writePreferencePairs } from './pairs-jsonl.ts';
export type { PreferencePair } from './first-error.ts';
