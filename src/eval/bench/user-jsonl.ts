/**
 * The user's own questions in the registry (`sharp eval --bench jsonl --data FILE`; the format:
 * src/data/readers/user-jsonl.ts, docs/extending.md). There is no official metric, so it reports
 * the answer metrics every open-QA entry reports (EM and F1 after SQuAD normalisation, max over the
 * aliases, and cover-EM) and, for questions whose paragraphs mark the supporting ones, MuSiQue's
 * support F1 of the paragraphs the agents cited.
 */
import type { Episode } from '../../data/episode.ts';
import { coverExactMatch, exactMatch, f1Score, maxOverGroundTruths } from '../../data/answers/squad.ts';
import { readUserJsonl } from '../../data/readers/user-jsonl.ts';
import { supportScore } from '../metrics/musique.ts';
import { meanScores } from '../scores.ts';
import { checkAligned, type Benchmark, type ItemScores, type Prediction } from '../types.ts';

function scoreUser(pred: Prediction, ep: Episode): ItemScores {
  const scores: ItemScores = {
    em: maxOverGroundTruths(exactMatch, pred.answer, ep.answers),
    f1: maxOverGroundTruths(f1Score, pred.answer, ep.answers),
    cover_em: coverExactMatch(pred.answer, ep.answers),
  };
  const gold = ep.paragraphs.filter((p) => p.isSupporting === true).map((p) => p.idx);
  if (gold.length > 0) scores.support_f1 = supportScore(pred.supportIdx, gold).f1;
  return scores;
}

export const userJsonl: Benchmark = {
  name: 'jsonl',
  description: 'your own questions: JSONL {id, question, answers, paragraphs?, decomposition?} (docs/extending.md)',
  sample: 'data/jsonl/questions_sample.jsonl',
  metric: 'EM, F1 and cover-EM (SQuAD normalisation, max over aliases); support F1 where paragraphs are marked',
  headline: 'f1',
  read: readUserJsonl,
  score: scoreUser,
  aggregate(preds, eps) {
    checkAligned(preds, eps);
    return meanScores(preds.map((p, i) => scoreUser(p, eps[i])));
  },
  groups: (ep): Record<string, string[]> =>
    ep.decomposition && ep.decomposition.length > 0 ? { hops: [`${ep.decomposition.length}hop`] } : {},
  predictionsFile: 'predictions.jsonl',
  formatPredictions(preds, eps) {
    checkAligned(preds, eps);
    return preds
      .map((p) => JSON.stringify({ id: p.id, predicted_answer: p.answer, predicted_support_idxs: [...p.supportIdx] }))
      .map((line) => `${line}\n`)
      .join('');
  },
};
