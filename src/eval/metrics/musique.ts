/**
 * MuSiQue metrics as StonyBrookNLP/musique evaluate_v1.0.py computes them: answer EM/F1 (max over
 * answer + aliases) and support F1 over paragraph idx, summed over answerable items only; on the
 * full (answerable + unanswerable) data also the grouped answer/support sufficiency F1, where each
 * question id appears twice. All rounded to 3 places with Python's round().
 */
import { exactMatch, f1Score, maxOverGroundTruths } from '../../data/answers/squad.ts';
import { pyRound } from '../../data/answers/pytext.ts';

/** One gold line, reduced to what the evaluator reads. */
export interface MusiqueGold {
  id: string;
  /** [answer, ...answer_aliases]. */
  answers: string[];
  /** idx of paragraphs with is_supporting = true, in file order. */
  supportIdx: number[];
  answerable: boolean;
}

/** One line of the official predictions file. */
export interface MusiquePrediction {
  id: string;
  predicted_answer: string;
  predicted_support_idxs: number[];
  predicted_answerable: boolean;
}

export interface SupportScore {
  em: number;
  f1: number;
  precision: number;
  recall: number;
}

/**
 * metrics/support.py (HotpotQA's update_sp on idx sets): precision/recall/F1 of the predicted idx set,
 * and F1 = EM = 1 when both sets are empty.
 */
export function supportScore(predicted: readonly number[], gold: readonly number[]): SupportScore {
  const pred = new Set(predicted.map((x) => Math.trunc(x)));
  const goldSet = new Set(gold.map((x) => Math.trunc(x)));
  let tp = 0;
  let fp = 0;
  let fn = 0;
  for (const e of pred)
    if (goldSet.has(e)) tp += 1;
    else fp += 1;
  for (const e of goldSet) if (!pred.has(e)) fn += 1;
  const precision = tp + fp > 0 ? tp / (tp + fp) : 0;
  const recall = tp + fn > 0 ? tp / (tp + fn) : 0;
  let f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  let em = fp + fn === 0 ? 1 : 0;
  if (pred.size === 0 && goldSet.size === 0) {
    f1 = 1;
    em = 1;
  }
  return { em, f1, precision, recall };
}

/** Answer EM and F1 of one prediction against the answer and aliases. */
export function musiqueAnswerScore(prediction: string, golds: readonly string[]): { em: number; f1: number } {
  return {
    em: maxOverGroundTruths(exactMatch, prediction, golds),
    f1: maxOverGroundTruths(f1Score, prediction, golds),
  };
}

export interface MusiqueMetrics {
  answer_f1: number;
  answer_em: number;
  support_f1: number;
  /** Only on the full data (some gold item unanswerable). */
  group_answer_sufficiency_f1?: number;
  group_support_sufficiency_f1?: number;
}

interface SufficiencyGroup {
  goldAnswers: string[] | null;
  predictedAnswer: string | null;
  goldSupport: number[];
  predictedSupport: number[];
  gold: boolean[];
  predicted: boolean[];
}

/**
 * `evaluate()` of evaluate_v1.0.py on parsed lines: same length and same id order required, per-item
 * sums over answerable gold, sufficiency groups keyed by id. Throws the evaluator's assertion texts.
 */
export function evaluateMusique(golds: readonly MusiqueGold[], preds: readonly MusiquePrediction[]): MusiqueMetrics {
  if (golds.length !== preds.length)
    throw new Error(
      `musique eval: the number of lines in the two files are not the same (gold ${golds.length}, predictions ` +
        `${preds.length})`,
    );
  let em = 0;
  let f1 = 0;
  let count = 0;
  let spF1 = 0;
  let spCount = 0;
  let fullData = false;
  const groups = new Map<string, SufficiencyGroup>();
  for (let i = 0; i < golds.length; i++) {
    const g = golds[i];
    const p = preds[i];
    if (g.id !== p.id)
      throw new Error(
        `musique eval: line ${i + 1}: ids differ (gold ${g.id}, prediction ${p.id}); predictions must be in gold order`,
      );
    if (g.answerable) {
      const a = musiqueAnswerScore(p.predicted_answer, g.answers);
      em += a.em;
      f1 += a.f1;
      count += 1;
      spF1 += supportScore(p.predicted_support_idxs, g.supportIdx).f1;
      spCount += 1;
    } else {
      fullData = true;
    }
    const grp = groups.get(g.id) ?? {
      goldAnswers: null,
      predictedAnswer: null,
      goldSupport: [],
      predictedSupport: [],
      gold: [],
      predicted: [],
    };
    if (g.answerable) {
      grp.goldAnswers = g.answers;
      grp.predictedAnswer = p.predicted_answer;
      grp.goldSupport = g.supportIdx;
      grp.predictedSupport = p.predicted_support_idxs;
    }
    grp.gold.push(g.answerable);
    grp.predicted.push(p.predicted_answerable);
    groups.set(g.id, grp);
  }
  const out: MusiqueMetrics = {
    answer_f1: pyRound(count > 0 ? f1 / count : 0, 3),
    answer_em: pyRound(count > 0 ? em / count : 0, 3),
    support_f1: pyRound(spCount > 0 ? spF1 / spCount : 0, 3),
  };
  if (fullData) {
    const ids = new Map<string, number>();
    for (const p of preds) ids.set(p.id, (ids.get(p.id) ?? 0) + 1);
    if ([...ids.values()].some((c) => c !== 2))
      throw new Error('musique eval: for sufficiency evaluation, there should two instances for each question');
    let ansSum = 0;
    let spSum = 0;
    for (const [id, grp] of groups) {
      if (grp.goldAnswers === null || grp.predictedAnswer === null)
        throw new Error(`musique eval: question ${id} has no answerable version`);
      const sufficient = grp.predicted.length === grp.gold.length && grp.predicted.every((v, k) => v === grp.gold[k]);
      if (sufficient) {
        ansSum += musiqueAnswerScore(grp.predictedAnswer, grp.goldAnswers).f1;
        spSum += supportScore(grp.predictedSupport, grp.goldSupport).f1;
      }
    }
    out.group_answer_sufficiency_f1 = pyRound(groups.size > 0 ? ansSum / groups.size : 0, 3);
    out.group_support_sufficiency_f1 = pyRound(groups.size > 0 ? spSum / groups.size : 0, 3);
  }
  return out;
}
