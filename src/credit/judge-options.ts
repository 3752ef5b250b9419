import type { Policy } from '../rollout/policy.ts';
import type { Protocol } from '../rollout/protocol/index.ts';
import type { CreditConfig, CreditOptions } from './compute.ts';
import { engineContextOf, policyResampler } from './engine-adapters.ts';
import { createJudge, type CandidateScorer } from './judges/index.ts';

/**
 * What computeCredits needs for credit.messageLevel and credit.failurePairs, built from the
 * config: the judge it names (`rule` over the gold decomposition, or `llm` through `score`), the
 * engine's agent context of a message, and a resampler that asks `policy` for another version of the
 * first error. Empty when both are off, so a run without them builds nothing.
 */
export function judgeOptions(
  cfg: Pick<CreditConfig, 'messageLevel' | 'failurePairs' | 'judge' | 'hopMatchF1' | 'judgeMargin'>,
  policy: Policy,
  protocol: Protocol,
  maxNewTokens: number,
  score?: CandidateScorer,
): Pick<CreditOptions, 'judge' | 'contextOf' | 'resample'> {
  if (!cfg.messageLevel && !cfg.failurePairs) return {};
  const judge = createJudge(cfg, { protocol, score });
  if (!cfg.failurePairs) return { judge };
  return { judge, contextOf: engineContextOf, resample: policyResampler(policy, protocol, maxNewTokens) };
}
