import { describe, expect, it } from 'vitest';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { hedgedReports, hedges } from './hedging.ts';

describe('hedged reports', () => {
  it('several candidates at a separator or "or" / "and"; one answer, empty parts and words inside names do not', () => {
    for (const r of ['1949 or 1962', 'Ada, Bo', 'Paris; Lyon', 'A/B', 'x | y', 'Zhoskaic\nDraizourv', 'Ada and Bo'])
      expect(hedges(r)).toBe(true);
    for (const r of ['1949', 'Thaizhourv Systems', '92 years old', 'Oregon', 'Andover', ', 1949 ,', ''])
      expect(hedges(r)).toBe(false);
    expect(hedges(null)).toBe(false);
  });

  it('counts the reports of workers that answered', () => {
    const t = makeTrajectory({
      id: 't',
      workers: [
        { subtask: 'a', answer: '1949 or 1962' },
        { subtask: 'b', answer: '1950' },
        { subtask: 'c', answer: null },
      ],
      finalAnswer: 'x',
    });
    expect(hedgedReports([t, t])).toEqual({ calls: 4, hedged: 2 });
  });
});
