import { readDocMath, docmathGold } from '../../data/readers/docmath.ts';
import { docmathAccuracy } from '../metrics/docmath.ts';
import { checkAligned, type Benchmark, type ItemScores } from '../types.ts';
import { meanScores } from '../scores.ts';

/** DocMath-Eval: accuracy by the official get_acc. */

export const docmath: Benchmark = {
  name: 'docmath',
  description: 'DocMath-Eval: numerical reasoning over financial documents with tables',
  sample: 'data/docmath/docmath_sample.json',
  metric: 'accuracy by get_acc (0.15 % tolerance, power-of-ten and percent rescaling)',
  headline: 'accuracy',
  read: readDocMath,
  score: (pred, ep): ItemScores => ({ accuracy: docmathAccuracy(pred.answer, docmathGold(ep)) }),
  aggregate(preds, eps) {
    checkAligned(preds, eps);
    return meanScores(preds.map((p, i) => docmath.score(p, eps[i])));
  },
  groups: (ep): Record<string, string[]> => (typeof ep.meta?.subset === 'string' ? { subset: [ep.meta.subset] } : {}),
  predictionsFile: 'predictions.json',
  formatPredictions(preds, eps) {
    checkAligned(preds, eps);
    // The leaderboard asks for {question_id, output}; the answer we scored rides along.
    return (
      JSON.stringify(
        preds.map((p) => ({ question_id: p.id, output: p.trace ?? p.answer, extracted_pred_answer: p.answer })),
        null,
        1,
      ) + '\n'
    );
  },
};
