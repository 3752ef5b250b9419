/** MuSiQue in the registry: evaluate_v1.0.py numbers, JSONL predictions in gold order. */
import type { Episode } from '../../data/episode.ts';
import { hopsFromId, readMusique } from '../../data/readers/musique.ts';
import { streamJsonRecords } from '../../data/readers/stream.ts';
import {
  evaluateMusique,
  musiqueAnswerScore,
  supportScore,
  type MusiqueGold,
  type MusiquePrediction,
} from '../metrics/musique.ts';
import { scoreMusique } from '../musique-score.ts';
import { checkAligned, type Benchmark, type ItemScores, type Prediction } from '../types.ts';

function musiqueGoldOf(ep: Episode): MusiqueGold {
  return {
    id: ep.id,
    answers: ep.answers,
    supportIdx: ep.paragraphs.filter((p) => p.isSupporting === true).map((p) => p.idx),
    answerable: ep.answerable ?? true,
  };
}

function toMusiquePrediction(p: Prediction): MusiquePrediction {
  // Key order as in the official files.
  return {
    id: p.id,
    predicted_answer: p.answer,
    predicted_support_idxs: [...p.supportIdx],
    predicted_answerable: p.answerable,
  };
}

/**
 * Raw gold lines of the given episodes, verbatim and in order: the official evaluator then scores a
 * --limit run (it requires as many gold lines as predictions).
 */
export function goldLinesFor(sourceFile: string, eps: readonly Episode[], idKey: string): unknown[] {
  const out: unknown[] = [];
  let k = 0;
  // Streamed: a --limit run reads only as far as its last episode.
  for (const rec of k < eps.length ? streamJsonRecords(sourceFile) : []) {
    const id = (rec.value as Record<string, unknown>)[idKey];
    if (String(id) === eps[k].id) {
      out.push(rec.value);
      k += 1;
      if (k >= eps.length) break; // not one record more than needed
    }
  }
  if (k < eps.length) throw new Error(`${sourceFile}: episode ${eps[k].id} not found in gold order`);
  return out;
}

export const musique: Benchmark = {
  name: 'musique',
  description: 'MuSiQue (ans or full) multi-hop QA, 2-4 hops, 20 paragraphs per question (distractor setting)',
  sample: 'data/musique/musique_ans_v1.0_sample.jsonl',
  metric: 'answer EM/F1 (max over aliases) and support F1, answerable items, 3 places (evaluate_v1.0.py)',
  headline: 'answer_f1',
  read: readMusique,
  repeatsIds: true,
  score(pred, ep): ItemScores {
    const answerableAcc = pred.answerable === (ep.answerable ?? true) ? 1 : 0;
    if (ep.answerable === false) return { answerable_acc: answerableAcc };
    const a = musiqueAnswerScore(pred.answer, ep.answers);
    const gold = musiqueGoldOf(ep);
    return {
      answer_em: a.em,
      answer_f1: a.f1,
      support_f1: supportScore(pred.supportIdx, gold.supportIdx).f1,
      answerable_acc: answerableAcc,
    };
  },
  aggregate(preds, eps) {
    checkAligned(preds, eps);
    return { ...evaluateMusique(eps.map(musiqueGoldOf), preds.map(toMusiquePrediction)) };
  },
  groups(ep): Record<string, string[]> {
    const hops = hopsFromId(ep.id);
    return hops === null ? {} : { hops: [`${hops}hop`] };
  },
  predictionsFile: 'predictions.jsonl',
  formatPredictions(preds, eps) {
    checkAligned(preds, eps);
    return preds.map((p) => JSON.stringify(toMusiquePrediction(p))).join('\n') + (preds.length > 0 ? '\n' : '');
  },
  goldSubset: {
    file: 'gold.jsonl',
    text: (sourceFile, eps) =>
      goldLinesFor(sourceFile, eps, 'id')
        .map((v) => JSON.stringify(v))
        .join('\n') + (eps.length > 0 ? '\n' : ''),
  },
  scoreFiles: (gold, preds) => ({ ...scoreMusique(gold, preds) }),
};
