import { describe, it, expect } from 'vitest';
import {
  hotpotF1,
  hotpotEM,
  hotpotSupportScore,
  twoWikiSupportScore,
  evaluateHotpot,
  evaluateTwoWiki,
  twoWikiEvidenceScore,
  type HotpotGold,
} from './hotpot.ts';

describe('HotpotQA answer F1 with the yes/no/noanswer rule', () => {
  it('yes/no only match themselves', () => {
    expect(hotpotF1('yes', 'yes').f1).toBe(1);
    expect(hotpotF1('Yes.', 'no').f1).toBe(0);
    // "yes it is" vs gold "yes": gold is special and differs from the prediction -> 0 (not 2/4)
    expect(hotpotF1('yes it is', 'yes').f1).toBe(0);
    expect(hotpotF1('no', 'no way').f1).toBe(0);
  });
  it('bag-of-tokens otherwise; empty vs empty is 0 (no MuSiQue empty rule)', () => {
    // pred [kansas, song, anthem], gold [kansas, song]: P 2/3, R 1, F1 0.8
    expect(hotpotF1('The Kansas Song anthem', 'Kansas Song')).toEqual({ f1: 0.8, precision: 2 / 3, recall: 1 });
    expect(hotpotF1('', '').f1).toBe(0);
    expect(hotpotEM('', '')).toBe(1);
  });
});

describe('supporting facts', () => {
  it('HotpotQA: sets of (title, sentence)', () => {
    // pred {(A,0),(A,1),(B,0)}, gold {(A,0),(B,0),(B,2)}: tp 2 fp 1 fn 1 -> P 2/3 R 2/3 F1 2/3
    const s = hotpotSupportScore(
      [
        ['A', 0],
        ['A', 1],
        ['B', 0],
        ['B', 0],
      ],
      [
        ['A', 0],
        ['B', 0],
        ['B', 2],
      ],
    );
    expect(s.f1).toBeCloseTo(2 / 3, 12);
    expect(s.em).toBe(0);
    expect(hotpotSupportScore([], []).f1).toBe(0); // no both-empty rule here
  });
  it('2Wiki lowercases titles', () => {
    expect(twoWikiSupportScore([['Kansas', 0]], [['kansas', 0]]).em).toBe(1);
    expect(hotpotSupportScore([['Kansas', 0]], [['kansas', 0]]).em).toBe(0);
  });
});

const golds: HotpotGold[] = [
  {
    id: 'a',
    answers: ['Kansas Song'],
    supportingFacts: [
      ['Kansas Song', 0],
      ['University of Kansas', 1],
    ],
  },
  {
    id: 'b',
    answers: ['yes'],
    supportingFacts: [
      ['X', 0],
      ['Y', 0],
    ],
  },
];

describe('evaluateHotpot', () => {
  it('means over gold, joint P/R products (hand-computed)', () => {
    const m = evaluateHotpot(golds, {
      answer: { a: 'Kansas Song', b: 'no' },
      sp: {
        a: [['Kansas Song', 0]],
        b: [
          ['X', 0],
          ['Y', 0],
        ],
      },
    });
    // a: EM 1, F1 1; sp P 1 R 1/2 F1 2/3; joint P 1, R 1/2, F1 2/3, EM 0
    // b: EM 0, F1 0 (P 0 R 0); sp EM 1 F1 1; joint P 0 R 0 F1 0
    expect(m.em).toBe(0.5);
    expect(m.f1).toBe(0.5);
    expect(m.sp_em).toBe(0.5);
    expect(m.sp_f1).toBeCloseTo((2 / 3 + 1) / 2, 12);
    expect(m.joint_f1).toBeCloseTo(1 / 3, 12);
    expect(m.joint_em).toBe(0);
    expect(m.joint_recall).toBeCloseTo(0.25, 12);
  });
  it('a missing id counts 0 and skips the joint metric', () => {
    const m = evaluateHotpot(golds, {
      answer: { a: 'Kansas Song' },
      sp: {
        a: [
          ['Kansas Song', 0],
          ['University of Kansas', 1],
        ],
      },
    });
    expect(m.em).toBe(0.5);
    expect(m.joint_em).toBe(0.5);
  });
});

describe('evaluateTwoWiki', () => {
  it('aliases, evidence and percentages rounded to 2', () => {
    const g: HotpotGold[] = [
      {
        id: 'q',
        answers: ['United States', 'USA'],
        supportingFacts: [['Film', 0]],
        evidences: [[['Film', 'country', 'United States']]],
      },
    ];
    const m = evaluateTwoWiki(g, {
      answer: { q: 'usa' },
      sp: { q: [['film', 0]] },
      evidence: {
        q: [
          ['film', 'country', 'United States.'],
          ['Film', 'director', 'Jo'],
        ],
      },
    });
    // answer EM via alias; sp EM after lowercasing; evidence: 1 of 2 predicted matches -> P 0.5 R 1 F1 2/3
    expect(m.em).toBe(100);
    expect(m.sp_em).toBe(100);
    expect(m.evi_f1).toBe(66.67);
    expect(m.evi_em).toBe(0);
    // joint P = 1*1*0.5, R = 1 -> F1 2/3
    expect(m.joint_f1).toBe(66.67);
  });
  it('evidence with no predictions scores 0', () => {
    expect(twoWikiEvidenceScore([], [[['a', 'b', 'c']]])).toEqual({ em: 0, f1: 0, precision: 0, recall: 0 });
  });
});
