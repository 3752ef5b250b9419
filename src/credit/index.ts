/**
 * The credit module's public surface: what the trainer and the CLI
 * import. `computeCredits` is the one stage call per group; the rest is exported for reports,
 * tests and other wiring.
 */
export { computeCredits, type CreditConfig, type CreditOptions, type CreditResult, type TrajectoryCredit } from './compute.ts';
export type { AgentCredit, RewardWeights } from './reward.ts';
export { CoalitionCache, type ReplayItem, type ReplayRunner } from './counterfactual.ts';
export { engineContextOf, engineReplayRunner, policyResampler } from './engine-adapters.ts';
export { judgeOptions } from './judge-options.ts';
export { createJudge, protocolAnswer, type Judge, type JudgeContext, type CandidateScorer } from './judges/index.ts';
export { lmCandidateScorer } from './judges/lm-scorer.ts';
export { creditReport, reportMetrics, type CreditReport } from './report.ts';
export { appendPreferencePairs, parsePreferencePair, readPreferencePairs, writePreferencePairs } from './pairs-jsonl.ts';
export type { PreferencePair, FirstError } from './first-error.ts';
export type { MessageReward, Label } from './message-shares.ts';
export { successFunction, type SuccessFn } from './success.ts';
