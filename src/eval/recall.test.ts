import { describe, expect, it } from 'vitest';
import type { Episode } from '../data/episode.ts';
import { supportRecall } from './recall.ts';
import type { Prediction } from './types.ts';

const ep = (id: string, supporting: number[], answerable = true): Episode => ({
  id,
  question: 'q',
  answers: answerable ? ['a'] : [],
  answerable,
  paragraphs: [0, 1, 2, 3].map((idx) => ({ idx, title: `T${idx}`, text: 'x', isSupporting: supporting.includes(idx) })),
});
const pred = (id: string, retrievedIdx?: number[]): Prediction => ({
  id,
  answer: 'a',
  supportIdx: [],
  answerable: true,
  ...(retrievedIdx ? { retrievedIdx } : {}),
});

describe('supportRecall', () => {
  it('averages the share of supporting paragraphs retrieved over answerable episodes with support', () => {
    // e1: 1 of 2 supporting retrieved (0.5); e2: 2 of 2 (1); e3: unanswerable, not counted; e4: no gold support, not
    // counted.
    const eps = [ep('e1', [0, 1]), ep('e2', [2, 3]), ep('e3', [0], false), ep('e4', [])];
    const preds = [pred('e1', [1, 2]), pred('e2', [3, 0, 2]), pred('e3', []), pred('e4', [0])];
    expect(supportRecall(preds, eps)).toBeCloseTo(0.75, 12);
  });

  it('is null when nothing can be scored: no gold support, or predictions that did not record retrievals', () => {
    expect(supportRecall([pred('e4', [0])], [ep('e4', [])])).toBeNull();
    expect(supportRecall([pred('e1')], [ep('e1', [0])])).toBeNull();
  });
});
