import { readGaia } from '../../data/readers/gaia.ts';
import { gaiaQuestionScorer } from '../metrics/gaia.ts';
import { checkAligned, type Benchmark, type ItemScores } from '../types.ts';
import { meanScores } from '../scores.ts';

/** GAIA (text-only tasks): accuracy by the leaderboard's question_scorer. */

export const gaia: Benchmark = {
  name: 'gaia',
  description: 'GAIA: general-assistant questions, levels 1-3; text-only tasks (no attached file)',
  sample: 'data/gaia/metadata.jsonl',
  metric: 'accuracy by question_scorer (numbers, lists, normalised strings)',
  headline: 'accuracy',
  // GAIA's metadata.jsonl is 165 records: read whole, then cut.
  read: (file, max) => readGaia(file, { textOnly: true }).slice(0, max),
  score: (pred, ep): ItemScores =>
    ep.answers.length > 0 ? { accuracy: gaiaQuestionScorer(pred.answer, ep.answers[0]) ? 1 : 0 } : {},
  aggregate(preds, eps) {
    checkAligned(preds, eps);
    return meanScores(preds.map((p, i) => gaia.score(p, eps[i])));
  },
  groups: (ep): Record<string, string[]> =>
    ep.meta?.level !== undefined ? { level: [`level ${String(ep.meta.level)}`] } : {},
  predictionsFile: 'predictions.jsonl',
  formatPredictions(preds, eps) {
    checkAligned(preds, eps);
    // The leaderboard's submission format.
    return (
      preds
        .map((p) => JSON.stringify({ task_id: p.id, model_answer: p.answer, reasoning_trace: p.trace ?? '' }))
        .join('\n') + (preds.length > 0 ? '\n' : '')
    );
  },
};
