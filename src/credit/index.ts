/**
 * The credit module's public surface: what the trainer and the CLI
 * import. `computeCredits` is the one stage call per group; the rest is exported for reports,
 * tests and other wiring.
 */
export { computeCredits, type CreditConfig } from './compute.ts';
export { engineReplayRunner } from './engine-adapters.ts';
export { judgeOptions } from './judge-options.ts';
export type { CandidateScorer } from './judges/index.ts';
export { lmCandidateScorer } from './judges/lm-scorer.ts';
export { creditReport, type CreditReport } from './report.ts';
export { parsePreferencePair, writePreferencePairs } from './pairs-jsonl.ts';
export type { PreferencePair } from './first-error.ts';
