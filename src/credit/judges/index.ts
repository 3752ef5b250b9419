import type { Protocol } from '../../rollout/protocol/index.ts';
import { type CandidateScorer, llmJudge } from './llm.ts';
import { ruleJudge } from './rule.ts';
import type { Judge } from './types.ts';

export type { Judge } from './types.ts';
export type { CandidateScorer } from './llm.ts';

/** The final answer of a message under the rollout protocol, or null when the message is not an answer. */
export function protocolAnswer(protocol: Protocol): (text: string) => string | null {
  return (text) => {
    const a = protocol.parse(text);
    return a.kind === 'answer' ? a.text : null;
  };
}

/** The subtask of a message under the rollout protocol when it is a delegation, else null. */
export function protocolDelegation(protocol: Protocol): (text: string) => string | null {
  return (text) => {
    const a = protocol.parse(text);
    return a.kind === 'call' && a.name === 'delegate' ? a.args : null;
  };
}

export interface JudgeSettings {
  judge: 'rule' | 'llm';
  hopMatchF1: number;
  judgeMargin: number;
}

/**
 * The judge named by `credit.judge` (chosen once). The rule judge needs the
 * protocol (to read answers out of resampled messages); the LLM judge needs a scorer over a model.
 */
export function createJudge(cfg: JudgeSettings, deps: { protocol: Protocol; score?: CandidateScorer }): Judge {
  if (cfg.judge === 'rule')
    return ruleJudge({
      parseAnswer: protocolAnswer(deps.protocol),
      parseDelegation: protocolDelegation(deps.protocol),
      hopMatchF1: cfg.hopMatchF1,
    });
  if (!deps.score) throw new Error('credit.judge=llm needs a model scorer (logprobs of yes/no), none was given');
  return llmJudge({ score: deps.score, margin: cfg.judgeMargin });
}
