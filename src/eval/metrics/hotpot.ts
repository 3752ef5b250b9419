/**
 * HotpotQA hotpot_evaluate_v1.py and 2WikiMultiHopQA 2wikimultihop_evaluate_v1.1.py, line for line:
 * answer EM/F1 with the yes/no/noanswer rule, sentence-level supporting-fact EM/F1, 2Wiki evidence
 * triples, and the joint metrics. HotpotQA prints means; 2Wiki prints percentages rounded to 2.
 */
import { normalizeAnswer, commonTokenCount } from '../../data/answers/squad.ts';
import { pyRemovePunctuation, pyRound, pySplit } from '../../data/answers/pytext.ts';

export interface PRF {
  f1: number;
  precision: number;
  recall: number;
}

const SPECIAL = new Set(['yes', 'no', 'noanswer']);

/**
 * `f1_score` of hotpot_evaluate_v1.py: a yes/no/noanswer answer on either side scores 0 unless both
 * normalise to the same string; no tokens in common -> 0 (so, unlike MuSiQue, empty vs empty is 0).
 */
export function hotpotF1(prediction: string, gold: string): PRF {
  const p = normalizeAnswer(prediction);
  const g = normalizeAnswer(gold);
  const zero = { f1: 0, precision: 0, recall: 0 };
  if (SPECIAL.has(p) && p !== g) return zero;
  if (SPECIAL.has(g) && p !== g) return zero;
  const pt = pySplit(p);
  const gt = pySplit(g);
  const same = commonTokenCount(pt, gt);
  if (same === 0) return zero;
  const precision = same / pt.length;
  const recall = same / gt.length;
  return { f1: (2 * precision * recall) / (precision + recall), precision, recall };
}

export function hotpotEM(prediction: string, gold: string): number {
  return normalizeAnswer(prediction) === normalizeAnswer(gold) ? 1 : 0;
}

export interface SetScore {
  em: number;
  f1: number;
  precision: number;
  recall: number;
}

/** P/R/F1/EM of two lists compared as sets of keys (`update_sp`), duplicates in a list counted. */
function setScore(pred: readonly string[], gold: readonly string[]): SetScore {
  const goldSet = new Set(gold);
  const predSet = new Set(pred);
  let tp = 0;
  let fp = 0;
  let fn = 0;
  for (const e of pred)
    if (goldSet.has(e)) tp += 1;
    else fp += 1;
  for (const e of gold) if (!predSet.has(e)) fn += 1;
  const precision = tp + fp > 0 ? tp / (tp + fp) : 0;
  const recall = tp + fn > 0 ? tp / (tp + fn) : 0;
  const f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return { em: fp + fn === 0 ? 1 : 0, f1, precision, recall };
}

const key = (f: readonly [string, number]): string => JSON.stringify([f[0], f[1]]);
const dedupe = (xs: ReadonlyArray<readonly [string, number]>): Array<readonly [string, number]> => {
  const seen = new Map<string, readonly [string, number]>();
  for (const x of xs) if (!seen.has(key(x))) seen.set(key(x), x);
  return [...seen.values()];
};

/** HotpotQA `update_sp`: supporting facts as sets of (title, sentence) tuples. */
export function hotpotSupportScore(
  pred: ReadonlyArray<readonly [string, number]>,
  gold: ReadonlyArray<readonly [string, number]>,
): SetScore {
  return setScore(dedupe(pred).map(key), dedupe(gold).map(key));
}

/** 2Wiki `update_sp`: the same after `normalize_sp` lowercases titles (set first, then lowercase). */
export function twoWikiSupportScore(
  pred: ReadonlyArray<readonly [string, number]>,
  gold: ReadonlyArray<readonly [string, number]>,
): SetScore {
  const lower = (xs: ReadonlyArray<readonly [string, number]>) => dedupe(xs).map(([t, s]) => key([t.toLowerCase(), s]));
  return setScore(lower(pred), lower(gold));
}

export interface HotpotGold {
  id: string;
  /** HotpotQA: [answer]; 2Wiki: answer plus aliases of its answer_id. */
  answers: string[];
  supportingFacts: Array<[string, number]>;
  /** 2Wiki only: per gold evidence, its accepted (subject, relation, object) variants. */
  evidences?: Array<Array<[string, string, string]>>;
}

export interface HotpotSubmission {
  answer: Record<string, string>;
  sp: Record<string, Array<[string, number]>>;
  evidence?: Record<string, Array<[string, string, string]>>;
}

const METRIC_KEYS = [
  'em',
  'f1',
  'prec',
  'recall',
  'sp_em',
  'sp_f1',
  'sp_prec',
  'sp_recall',
  'joint_em',
  'joint_f1',
  'joint_prec',
  'joint_recall',
] as const;

/** `eval()` of hotpot_evaluate_v1.py: means over all gold items (a missing id counts 0). */
export function evaluateHotpot(golds: readonly HotpotGold[], sub: HotpotSubmission): Record<string, number> {
  const m: Record<string, number> = Object.fromEntries(METRIC_KEYS.map((k) => [k, 0]));
  for (const dp of golds) {
    let canJoint = true;
    const none: SetScore = { em: 0, f1: 0, precision: 0, recall: 0 };
    let a = none;
    let s = none;
    if (!(dp.id in sub.answer)) canJoint = false;
    else {
      const prf = hotpotF1(sub.answer[dp.id], dp.answers[0] ?? '');
      a = { em: hotpotEM(sub.answer[dp.id], dp.answers[0] ?? ''), ...prf };
      m.em += a.em;
      m.f1 += prf.f1;
      m.prec += prf.precision;
      m.recall += prf.recall;
    }
    if (!(dp.id in sub.sp)) canJoint = false;
    else {
      const sc = hotpotSupportScore(sub.sp[dp.id], dp.supportingFacts);
      s = sc;
      m.sp_em += sc.em;
      m.sp_f1 += sc.f1;
      m.sp_prec += sc.precision;
      m.sp_recall += sc.recall;
    }
    if (canJoint) {
      const jp = a.precision * s.precision;
      const jr = a.recall * s.recall;
      m.joint_f1 += jp + jr > 0 ? (2 * jp * jr) / (jp + jr) : 0;
      m.joint_em += a.em * s.em;
      m.joint_prec += jp;
      m.joint_recall += jr;
    }
  }
  for (const k of METRIC_KEYS) m[k] /= golds.length;
  return m;
}

/** 2Wiki `normalize_evi` on one string: lower, drop punctuation, collapse whitespace (no articles). */
function normEvi(s: string): string {
  return pySplit(pyRemovePunctuation(s.toLowerCase())).join(' ');
}

/** 2Wiki `update_evi`: a predicted triple matches a gold evidence when it equals one of its variants. */
export function twoWikiEvidenceScore(
  pred: ReadonlyArray<readonly string[]>,
  gold: ReadonlyArray<ReadonlyArray<readonly string[]>>,
): SetScore {
  const k = (t: readonly string[]) => JSON.stringify(t.map(normEvi));
  const predSet = new Set(pred.map(k));
  const goldSets = gold.map((variants) => new Set(variants.map(k)));
  let matches = 0;
  for (const p of predSet) if (goldSets.some((g) => g.has(p))) matches += 1;
  const precision = predSet.size > 0 ? matches / predSet.size : 0;
  const recall = goldSets.length > 0 ? matches / goldSets.length : 0;
  const f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return { em: matches === predSet.size && predSet.size === goldSets.length ? 1 : 0, f1, precision, recall };
}

/** `eval()` of 2wikimultihop_evaluate_v1.1.py: max over aliases per answer metric, x100, 2 places. */
export function evaluateTwoWiki(golds: readonly HotpotGold[], sub: HotpotSubmission): Record<string, number> {
  const keys = [...METRIC_KEYS.slice(0, 8), 'evi_em', 'evi_f1', 'evi_prec', 'evi_recall', ...METRIC_KEYS.slice(8)];
  const m: Record<string, number> = Object.fromEntries(keys.map((k) => [k, 0]));
  for (const dp of golds) {
    let canJoint = true;
    const none: SetScore = { em: 0, f1: 0, precision: 0, recall: 0 };
    let a = none;
    let s = none;
    let e = none;
    if (!(dp.id in sub.answer)) canJoint = false;
    else {
      const pred = sub.answer[dp.id];
      let best: SetScore = { em: 0, f1: 0, precision: 0, recall: 0 };
      for (const g of new Set(dp.answers)) {
        const prf = hotpotF1(pred, g);
        best = {
          em: Math.max(best.em, hotpotEM(pred, g)),
          f1: Math.max(best.f1, prf.f1),
          precision: Math.max(best.precision, prf.precision),
          recall: Math.max(best.recall, prf.recall),
        };
      }
      a = best;
      m.em += best.em;
      m.f1 += best.f1;
      m.prec += best.precision;
      m.recall += best.recall;
    }
    if (!(dp.id in sub.sp)) canJoint = false;
    else {
      s = twoWikiSupportScore(sub.sp[dp.id], dp.supportingFacts);
      m.sp_em += s.em;
      m.sp_f1 += s.f1;
      m.sp_prec += s.precision;
      m.sp_recall += s.recall;
    }
    if (!sub.evidence || !(dp.id in sub.evidence)) canJoint = false;
    else {
      const sc = twoWikiEvidenceScore(sub.evidence[dp.id], dp.evidences ?? []);
      e = sc;
      m.evi_em += sc.em;
      m.evi_f1 += sc.f1;
      m.evi_prec += sc.precision;
      m.evi_recall += sc.recall;
    }
    if (canJoint) {
      const jp = a.precision * s.precision * e.precision;
      const jr = a.recall * s.recall * e.recall;
      m.joint_f1 += jp + jr > 0 ? (2 * jp * jr) / (jp + jr) : 0;
      m.joint_em += a.em * s.em * e.em;
      m.joint_prec += jp;
      m.joint_recall += jr;
    }
  }
  for (const k of keys) m[k] = pyRound((m[k] / golds.length) * 100, 2);
  return m;
}
