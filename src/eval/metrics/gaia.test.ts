import { describe, it, expect } from 'vitest';
import { gaiaQuestionScorer, normalizeNumberStr, normalizeGaiaStr } from './gaia.ts';

describe('GAIA question_scorer', () => {
  it('numbers: gold parsed by float(), answer after stripping $ % ,', () => {
    expect(gaiaQuestionScorer('$1,000', '1000')).toBe(true);
    expect(gaiaQuestionScorer('1e3', '1000')).toBe(true); // float('1e3') == 1000.0
    expect(gaiaQuestionScorer('17%', '17')).toBe(true);
    expect(gaiaQuestionScorer('17.0', '17')).toBe(true);
    expect(gaiaQuestionScorer('17 apples', '17')).toBe(false); // float('17 apples') fails -> inf
    expect(gaiaQuestionScorer('', '0')).toBe(false); // float('') fails -> inf != 0
    expect(gaiaQuestionScorer(' 3 ', '3.0')).toBe(true);
  });
  it('inf and nan gold behave as in Python', () => {
    // an unparseable answer becomes float('inf'), which equals gold 'inf'
    expect(gaiaQuestionScorer('no idea', 'inf')).toBe(true);
    expect(gaiaQuestionScorer('Infinity', 'inf')).toBe(true);
    expect(gaiaQuestionScorer('nan', 'nan')).toBe(false); // nan != nan
    expect(normalizeNumberStr('')).toBe(Infinity);
  });
  it('lists split on , and ; element-wise', () => {
    expect(gaiaQuestionScorer('3; 4, x', '3,4,X')).toBe(true); // numbers as floats, strings lowercased
    expect(gaiaQuestionScorer('3, 4', '3, 4, 5')).toBe(false); // lengths differ
    expect(gaiaQuestionScorer('a.b, c', 'ab, c')).toBe(false); // punctuation kept inside lists
    // gold "$1,000" is not a float, so it is the list ["$1", "000"] and "$1,000" matches element-wise
    expect(gaiaQuestionScorer('$1,000', '$1,000')).toBe(true);
    expect(gaiaQuestionScorer('1000', '$1,000')).toBe(false);
  });
  it('strings: no whitespace, lowercase, no punctuation', () => {
    expect(gaiaQuestionScorer('Sea gull!', 'seagull')).toBe(true);
    expect(gaiaQuestionScorer(null, 'None')).toBe(true); // a missing answer is the string "None"
    expect(normalizeGaiaStr('St. Petersburg')).toBe('stpetersburg');
    expect(gaiaQuestionScorer('the right answer', 'right answer')).toBe(false); // articles are not removed
  });
});
