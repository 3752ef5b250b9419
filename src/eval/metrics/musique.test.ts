import { describe, it, expect } from 'vitest';
import {
  evaluateMusique,
  supportScore,
  musiqueAnswerScore,
  type MusiqueGold,
  type MusiquePrediction,
} from './musique.ts';

const gold = (id: string, answers: string[], supportIdx: number[], answerable = true): MusiqueGold => ({
  id,
  answers,
  supportIdx,
  answerable,
});
const pred = (id: string, a: string, s: number[], answerable = true): MusiquePrediction => ({
  id,
  predicted_answer: a,
  predicted_support_idxs: s,
  predicted_answerable: answerable,
});

describe('supportScore (metrics/support.py)', () => {
  it('hand-computed precision / recall / F1', () => {
    // pred {1,2,3}, gold {2,3,4,5}: tp 2, fp 1, fn 2 -> P 2/3, R 1/2, F1 = 2*(1/3)/(7/6) = 4/7
    const s = supportScore([1, 2, 3], [2, 3, 4, 5]);
    expect(s.precision).toBeCloseTo(2 / 3, 12);
    expect(s.recall).toBeCloseTo(0.5, 12);
    expect(s.f1).toBeCloseTo(4 / 7, 12);
    expect(s.em).toBe(0);
  });
  it('duplicates collapse (sets); both empty -> F1 = EM = 1; one empty -> 0', () => {
    expect(supportScore([2, 2, 3], [3, 2]).f1).toBe(1);
    expect(supportScore([], [])).toEqual({ em: 1, f1: 1, precision: 0, recall: 0 });
    expect(supportScore([], [1]).f1).toBe(0);
    expect(supportScore([1], []).f1).toBe(0);
  });
});

describe('evaluateMusique (evaluate_v1.0.py)', () => {
  it('answer-only items, aliases, rounding to 3 places', () => {
    const golds = [
      gold('2hop__1', ['G. Stanley Hall', 'Stanley Hall'], [6, 10]),
      gold('2hop__2', ['Paris'], [0, 1]),
      gold('3hop1__3', ['New York'], [3, 4, 5]),
    ];
    const preds = [
      pred('2hop__1', 'stanley hall', [6, 10]),
      pred('2hop__2', 'London', [0]),
      pred('3hop1__3', 'New York City', [3, 4, 5, 9]),
    ];
    // EM: 1, 0, 0 -> 1/3 = 0.333. F1: 1, 0, 0.8 -> 1.8/3 = 0.6.
    // support F1: 1; {0} vs {0,1}: P 1, R 1/2 -> 2/3; {3,4,5,9} vs {3,4,5}: P 3/4, R 1 -> 6/7.
    // mean = (1 + 0.666667 + 0.857143) / 3 = 0.841270 -> 0.841
    expect(evaluateMusique(golds, preds)).toEqual({ answer_f1: 0.6, answer_em: 0.333, support_f1: 0.841 });
  });
  it('unanswerable gold items are skipped by answer/support and trigger the sufficiency metrics', () => {
    const golds = [
      gold('q1', ['Paris'], [0, 1]),
      gold('q1', [], [], false),
      gold('q2', ['Rome'], [2, 3]),
      gold('q2', [], [], false),
    ];
    const preds = [
      pred('q1', 'Paris', [0, 1], true),
      pred('q1', 'Paris', [0], false), // right sufficiency for q1
      pred('q2', 'Rome', [2], true),
      pred('q2', 'Rome', [2], true), // wrong sufficiency for q2: its group scores 0
    ];
    // answer: q1 EM 1 F1 1, q2 EM 1 F1 1 -> 1, 1; support: 1 and {2} vs {2,3} = 2/3 -> 0.833
    // group answer: q1 1, q2 0 -> 0.5; group support: q1 1, q2 0 -> 0.5
    expect(evaluateMusique(golds, preds)).toEqual({
      answer_f1: 1,
      answer_em: 1,
      support_f1: 0.833,
      group_answer_sufficiency_f1: 0.5,
      group_support_sufficiency_f1: 0.5,
    });
  });
  it('rejects files the official script rejects', () => {
    expect(() => evaluateMusique([gold('a', ['x'], [])], [])).toThrow(/number of lines/);
    expect(() => evaluateMusique([gold('a', ['x'], [])], [pred('b', 'x', [])])).toThrow(/line 1: ids differ/);
    expect(() =>
      evaluateMusique([gold('a', ['x'], []), gold('b', [], [], false)], [pred('a', 'x', []), pred('b', '', [])]),
    ).toThrow(/two instances/);
  });
  it('empty prediction against a non-empty answer scores 0; empty gold list throws', () => {
    expect(musiqueAnswerScore('', ['Paris'])).toEqual({ em: 0, f1: 0 });
    expect(() => musiqueAnswerScore('x', [])).toThrow();
  });
});
