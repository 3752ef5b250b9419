import { describe, expect, it } from 'vitest';
import { creditColour, creditWord, fmt } from './colour.ts';

describe('credit colours', () => {
  it('green for credit > 0, red for < 0, grey for 0, stronger with |credit| / scale', () => {
    expect(creditColour(0)).toBe('rgb(238, 238, 238)');
    expect(creditColour(Number.NaN)).toBe('rgb(238, 238, 238)');
    // t = 1: the full tint.
    expect(creditColour(1)).toBe('rgb(120, 200, 120)');
    expect(creditColour(-1)).toBe('rgb(235, 120, 120)');
    expect(creditColour(5, 5)).toBe('rgb(120, 200, 120)');
    // t = 1/3: factor 0.25 + 0.75 / 3 = 0.5 -> halfway from (245, 250, 245) to (120, 200, 120).
    expect(creditColour(1 / 3)).toBe('rgb(183, 225, 183)');
    // Beyond the scale it saturates.
    expect(creditColour(-3, 1)).toBe(creditColour(-1, 1));
  });

  it('words and numbers', () => {
    expect([creditWord(0.5), creditWord(-1e-3), creditWord(0)]).toEqual(['helpful', 'harmful', 'neutral']);
    expect([fmt(1 / 3), fmt(null), fmt(Number.POSITIVE_INFINITY), fmt(2, 1)]).toEqual(['0.333', '-', '-', '2.0']);
  });
});
