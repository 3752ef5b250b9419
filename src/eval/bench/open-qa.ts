/**
 * FRAMES and WebWalkerQA: their official metric is an LLM judge (FRAMES: Gemini auto-rater;
 * WebWalkerQA: GPT-4 judge), which runs nowhere offline. We report cover-EM as the headline plus EM
 * and F1; a judge can be plugged in by the eval command through the credit judge interface.
 */
import type { Episode } from '../../data/episode.ts';
import { readFrames } from '../../data/readers/frames.ts';
import { readWebWalker } from '../../data/readers/webwalker.ts';
import { coverExactMatch, exactMatch, f1Score, maxOverGroundTruths } from '../../data/answers/squad.ts';
import { checkAligned, type Benchmark, type ItemScores, type Prediction } from '../types.ts';
import { meanScores } from '../scores.ts';

function scoreOpen(pred: Prediction, ep: Episode): ItemScores {
  if (ep.answers.length === 0) return {};
  return {
    cover_em: coverExactMatch(pred.answer, ep.answers),
    em: maxOverGroundTruths(exactMatch, pred.answer, ep.answers),
    f1: maxOverGroundTruths(f1Score, pred.answer, ep.answers),
  };
}

function jsonl(rows: readonly object[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length > 0 ? '\n' : '');
}

export const frames: Benchmark = {
  name: 'frames',
  description: 'FRAMES: 824 multi-constraint questions over Wikipedia (numerical, tabular, temporal reasoning)',
  sample: 'data/frames/test.tsv',
  metric: 'LLM judge officially; here cover-EM, EM and F1 (SQuAD normalisation)',
  headline: 'cover_em',
  read: readFrames,
  score: scoreOpen,
  aggregate(preds, eps) {
    checkAligned(preds, eps);
    return meanScores(preds.map((p, i) => scoreOpen(p, eps[i])));
  },
  groups: (ep): Record<string, string[]> =>
    Array.isArray(ep.meta?.reasoningTypes) ? { reasoning_type: ep.meta.reasoningTypes } : {},
  predictionsFile: 'predictions.jsonl',
  formatPredictions(preds, eps) {
    checkAligned(preds, eps);
    return jsonl(preds.map((p, i) => ({ id: p.id, Prompt: eps[i].question, prediction: p.answer })));
  },
};

export const webwalkerqa: Benchmark = {
  name: 'webwalkerqa',
  description: 'WebWalkerQA: questions answered by walking a website from its root URL',
  sample: 'data/webwalkerqa/webwalkerqa_sample.jsonl',
  metric: 'LLM judge officially; here cover-EM, EM and F1 (SQuAD normalisation)',
  headline: 'cover_em',
  read: readWebWalker,
  score: scoreOpen,
  aggregate(preds, eps) {
    checkAligned(preds, eps);
    return meanScores(preds.map((p, i) => scoreOpen(p, eps[i])));
  },
  groups(ep) {
    const g: Record<string, string[]> = {};
    for (const k of ['type', 'difficulty', 'lang'] as const)
      if (typeof ep.meta?.[k] === 'string') g[k] = [ep.meta[k] as string];
    return g;
  },
  predictionsFile: 'predictions.jsonl',
  formatPredictions(preds, eps) {
    checkAligned(preds, eps);
    return jsonl(
      preds.map((p, i) => ({
        id: p.id,
        question: eps[i].question,
        pred: p.answer,
        root_url: eps[i].meta?.rootUrl ?? '',
      })),
    );
  },
};
