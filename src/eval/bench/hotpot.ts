/**
 * HotpotQA distractor and 2WikiMultiHopQA in the registry. Agents cite paragraphs; the official sp
 * metric counts sentences, so a cited paragraph stands for all its sentences.
 */
import type { Episode } from '../../data/episode.ts';
import {
  goldEvidences,
  goldSupportingFacts,
  readHotpot,
  readTwoWiki,
  supportingFactsFromIdx,
} from '../../data/readers/hotpot.ts';
import {
  evaluateHotpot,
  evaluateTwoWiki,
  hotpotEM,
  hotpotF1,
  hotpotSupportScore,
  twoWikiSupportScore,
  type HotpotGold,
  type HotpotSubmission,
} from '../metrics/hotpot.ts';
import { checkAligned, type Benchmark, type ItemScores, type Prediction } from '../types.ts';
import { goldLinesFor } from './musique.ts';

function goldOf(ep: Episode): HotpotGold {
  const ev = goldEvidences(ep);
  return {
    id: ep.id,
    answers: ep.answers,
    supportingFacts: goldSupportingFacts(ep),
    ...(ev.length > 0 ? { evidences: ev.map((t) => [t]) } : {}),
  };
}

/** The official submission object {answer: {id: ans}, sp: {id: [[title, sent], ...]}}. */
function hotpotSubmission(
  preds: readonly Prediction[],
  eps: readonly Episode[],
  withEvidence: boolean,
): HotpotSubmission {
  checkAligned(preds, eps);
  const sub: HotpotSubmission = { answer: {}, sp: {} };
  if (withEvidence) sub.evidence = {};
  preds.forEach((p, i) => {
    sub.answer[p.id] = p.answer;
    sub.sp[p.id] = supportingFactsFromIdx(eps[i], p.supportIdx);
    // Our agents do not extract evidence triples: an empty list (scored 0 by the official script).
    if (sub.evidence) sub.evidence[p.id] = [];
  });
  return sub;
}

const groupsOf = (ep: Episode): Record<string, string[]> => {
  const g: Record<string, string[]> = {};
  if (typeof ep.meta?.type === 'string') g.type = [ep.meta.type];
  if (typeof ep.meta?.level === 'string') g.level = [ep.meta.level];
  return g;
};

export const hotpotqa: Benchmark = {
  name: 'hotpotqa',
  description: 'HotpotQA distractor: 2-hop bridge and comparison questions, 10 paragraphs each',
  sample: 'data/hotpotqa/hotpot_dev_distractor_sample.json',
  metric: 'answer EM/F1 with the yes/no rule, supporting-fact and joint EM/F1 (hotpot_evaluate_v1.py)',
  headline: 'f1',
  read: readHotpot,
  score(pred, ep): ItemScores {
    const gold = ep.answers[0] ?? '';
    const sp = hotpotSupportScore(supportingFactsFromIdx(ep, pred.supportIdx), goldSupportingFacts(ep));
    return { em: hotpotEM(pred.answer, gold), f1: hotpotF1(pred.answer, gold).f1, sp_em: sp.em, sp_f1: sp.f1 };
  },
  aggregate: (preds, eps) => evaluateHotpot(eps.map(goldOf), hotpotSubmission(preds, eps, false)),
  groups: groupsOf,
  predictionsFile: 'predictions.json',
  formatPredictions: (preds, eps) => JSON.stringify(hotpotSubmission(preds, eps, false)) + '\n',
  goldSubset: { file: 'gold.json', text: (src, eps) => JSON.stringify(goldLinesFor(src, eps, '_id')) + '\n' },
};

export const twoWiki: Benchmark = {
  name: '2wiki',
  description: '2WikiMultiHopQA: comparison, inference, compositional and bridge-comparison questions',
  sample: 'data/2wiki/2wiki_dev_sample.json',
  metric:
    'answer, supporting-fact, evidence and joint EM/F1 in percent (2wikimultihop_evaluate_v1.1.py, no alias file)',
  headline: 'f1',
  read: readTwoWiki,
  score(pred, ep): ItemScores {
    let em = 0;
    let f1 = 0;
    for (const g of ep.answers) {
      em = Math.max(em, hotpotEM(pred.answer, g));
      f1 = Math.max(f1, hotpotF1(pred.answer, g).f1);
    }
    const sp = twoWikiSupportScore(supportingFactsFromIdx(ep, pred.supportIdx), goldSupportingFacts(ep));
    return { em, f1, sp_em: sp.em, sp_f1: sp.f1 };
  },
  aggregate: (preds, eps) => evaluateTwoWiki(eps.map(goldOf), hotpotSubmission(preds, eps, true)),
  groups: groupsOf,
  predictionsFile: 'predictions.json',
  formatPredictions: (preds, eps) => JSON.stringify(hotpotSubmission(preds, eps, true)) + '\n',
  goldSubset: { file: 'gold.json', text: (src, eps) => JSON.stringify(goldLinesFor(src, eps, '_id')) + '\n' },
};
