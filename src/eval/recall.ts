import type { Episode } from '../data/episode.ts';
import type { Prediction } from './types.ts';

/**
 * Recall of the supporting paragraphs: per answerable episode with gold support (MuSiQue
 * is_supporting, HotpotQA / 2Wiki supporting-fact titles), the share of its supporting paragraphs
 * that some search of the trajectory returned among its top k (k = rollout.search.topK), averaged
 * over those episodes. Over a pooled index (`sharp eval --retrieval open`) a hit counts when it is
 * the paragraph itself (same title and text). Null when no episode has gold support or no
 * prediction recorded what it retrieved (logs of older runs).
 */
export function supportRecall(preds: readonly Prediction[], eps: readonly Episode[]): number | null {
  let sum = 0;
  let n = 0;
  eps.forEach((ep, i) => {
    const gold = ep.paragraphs.filter((p) => p.isSupporting === true).map((p) => p.idx);
    const got = preds[i]?.retrievedIdx;
    if (gold.length === 0 || ep.answerable === false || got === undefined) return;
    const seen = new Set(got);
    sum += gold.filter((g) => seen.has(g)).length / gold.length;
    n += 1;
  });
  return n === 0 ? null : sum / n;
}
