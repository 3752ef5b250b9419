import type { CandidateScorer } from '../credit/judges/llm.ts';
import type { Episode } from '../data/episode.ts';
import { checkAligned, type Prediction } from './types.ts';

/**
 * Answer judges for benchmarks whose official metric is an LLM judge (FRAMES' auto-rater,
 * WebWalkerQA's GPT-4 judge). The model is reached through the credit module's
 * CandidateScorer (log-probabilities of continuations), so the policy or any checkpoint can judge.
 * Cover-EM stays the default, offline number; a judge score is reported beside it, never instead.
 */
export type AnswerJudge = (question: string, prediction: string, golds: readonly string[]) => Promise<boolean>;

export interface LlmAnswerJudgeOptions {
  score: CandidateScorer;
  yes?: string;
  no?: string;
}

/** Prompt in the spirit of the FRAMES auto-rater: same meaning as the gold, not the same words. */
export function answerJudgePrompt(question: string, prediction: string, golds: readonly string[]): string {
  return [
    'You check whether an answer to a question is correct.',
    `Question: ${question}`,
    `Ground truth answer: ${golds.join(' | ')}`,
    `Predicted answer: ${prediction}`,
    'Does the predicted answer contain the meaning of the ground truth (extra detail is fine, a contradiction is ' +
      'not)? Answer yes or no.',
    'Answer:',
  ].join('\n');
}

export function llmAnswerJudge(opts: LlmAnswerJudgeOptions): AnswerJudge {
  const yes = opts.yes ?? ' yes';
  const no = opts.no ?? ' no';
  return async (question, prediction, golds) => {
    if (prediction.trim().length === 0) return false;
    const lp = await opts.score(answerJudgePrompt(question, prediction, golds), [yes, no]);
    if (lp.length !== 2 || !lp.every(Number.isFinite))
      throw new Error(`answer judge: scorer returned ${JSON.stringify(lp)} for 2 candidates`);
    return lp[0] > lp[1];
  };
}

/** judge_accuracy over episodes with gold answers, plus the per-item verdicts (1/0, null = no gold). */
export async function judgeAccuracy(
  preds: readonly Prediction[],
  eps: readonly Episode[],
  judge: AnswerJudge,
): Promise<{ judge_accuracy: number; items: Array<number | null> }> {
  checkAligned(preds, eps);
  const items: Array<number | null> = [];
  for (let i = 0; i < eps.length; i++) {
    // Sequential: the scorer runs the model, which is not re-entrant.
    items.push(
      eps[i].answers.length === 0 ? null : (await judge(eps[i].question, preds[i].answer, eps[i].answers)) ? 1 : 0,
    );
  }
  const scored = items.filter((x): x is number => x !== null);
  return { judge_accuracy: scored.length > 0 ? scored.reduce((a, b) => a + b, 0) / scored.length : 0, items };
}
