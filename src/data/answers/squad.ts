import { PY_WORD_CHAR, pyRemovePunctuation, pySplit } from './pytext.ts';

/**
 * SQuAD answer normalisation and token metrics, as in MuSiQue's metrics/answer.py (taken from
 * AllenNLP's squad tools, itself the SQuAD v2 script) and HotpotQA's hotpot_evaluate_v1.py. Other
 * modules import these three names; the maths is Python's, string for string.
 */

// Python `\b(a|an|the)\b` with Unicode word characters: JS `\b` would split "éthe" and delete "the".
const ARTICLES = new RegExp(`(?<![${PY_WORD_CHAR}])(?:a|an|the)(?![${PY_WORD_CHAR}])`, 'gu');

/** lower -> drop ASCII punctuation -> articles to a space -> collapse whitespace (in that order). */
export function normalizeAnswer(s: string): string {
  const lowered = s.toLowerCase();
  const noPunct = pyRemovePunctuation(lowered);
  const noArticles = noPunct.replace(ARTICLES, ' ');
  return pySplit(noArticles).join(' ');
}

/** 1 when the normalised strings are equal (MuSiQue `compute_exact`). */
export function exactMatch(prediction: string, gold: string): number {
  return normalizeAnswer(prediction) === normalizeAnswer(gold) ? 1 : 0;
}

/** Tokens of the normalised answer; `get_tokens` returns [] for an empty raw string. */
function answerTokens(s: string): string[] {
  if (!s) return [];
  return normalizeAnswer(s)
    .split(' ')
    .filter((t) => t.length > 0);
}

/** Size of the multiset intersection (Python `sum((Counter(a) & Counter(b)).values())`). */
export function commonTokenCount(a: readonly string[], b: readonly string[]): number {
  const counts = new Map<string, number>();
  for (const t of a) counts.set(t, (counts.get(t) ?? 0) + 1);
  let same = 0;
  for (const t of b) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      same += 1;
      counts.set(t, c - 1);
    }
  }
  return same;
}

/**
 * Bag-of-tokens F1 (MuSiQue `compute_f1`): when either side has no tokens the score is 1 if both
 * are empty, else 0 ("empty list -> equality").
 */
export function f1Score(prediction: string, gold: string): number {
  const goldToks = answerTokens(gold);
  const predToks = answerTokens(prediction);
  if (goldToks.length === 0 || predToks.length === 0) return goldToks.length === predToks.length ? 1 : 0;
  const same = commonTokenCount(goldToks, predToks);
  if (same === 0) return 0;
  const precision = same / predToks.length;
  const recall = same / goldToks.length;
  return (2 * precision * recall) / (precision + recall);
}

/**
 * `metric_max_over_ground_truths`: best score over the answer and its aliases. Python's max() of an
 * empty list raises; so does this (an answerable item without answers is bad gold).
 */
export function maxOverGroundTruths(
  metric: (prediction: string, gold: string) => number,
  prediction: string,
  golds: readonly string[],
): number {
  if (golds.length === 0) throw new Error('maxOverGroundTruths: no gold answers to compare with');
  let best = -Infinity;
  for (const g of golds) best = Math.max(best, metric(prediction, g));
  return best;
}

/**
 * Cover-EM, our stand-in where the official metric is an LLM judge (FRAMES, WebWalkerQA): 1 when
 * some normalised gold occurs in the normalised prediction on token boundaries ("1" is not covered
 * by "10"; the credit module's cover_em success uses the same rule). An empty normalised gold covers
 * nothing, else every prediction would score.
 */
export function coverExactMatch(prediction: string, golds: readonly string[]): number {
  const p = ` ${normalizeAnswer(prediction)} `;
  for (const g of golds) {
    const n = normalizeAnswer(g);
    if (n.length > 0 && p.includes(` ${n} `)) return 1;
  }
  return 0;
}
