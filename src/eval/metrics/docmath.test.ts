import { describe, it, expect } from 'vitest';
import { compareTwoNumbers, docmathAccuracy, cleanDocmathAnswer, normalizeDocmath } from './docmath.ts';

describe('DocMath-Eval compare_two_numbers', () => {
  it('0.15 % relative tolerance', () => {
    expect(compareTwoNumbers(100.15, 100)).toBe(true); // |100.15 - 100| = 0.15 <= 0.0015 * 100
    expect(compareTwoNumbers(100.16, 100)).toBe(false);
    expect(compareTwoNumbers(-49.96, -50)).toBe(true); // eps = 0.075
  });
  it('power-of-ten rescaling: an exact power of ten apart is correct', () => {
    expect(compareTwoNumbers(1200, 1.2)).toBe(true); // ratio 1000, log10 = 3 exactly
    expect(compareTwoNumbers(0.012, 12)).toBe(true);
    // 1201 vs 1.2 is not a power of ten, but passes the x1000 rule: |1200 - 1201| <= 0.0015 * 1201
    expect(compareTwoNumbers(1201, 1.2)).toBe(true);
    expect(compareTwoNumbers(1250, 1.2)).toBe(false); // 1200 is 50 off 1250; no rule applies
  });
  it('percent rescaling: x100 / x1000 / x100000 within 0.15 %', () => {
    // v1 = 12.5, v2 = 0.1251: 0.1251 <= 12.5/50 and 12.51 within 12.5 +- 0.01875
    expect(compareTwoNumbers(0.1251, 12.5)).toBe(true);
    expect(compareTwoNumbers(0.13, 12.5)).toBe(false); // 13 is 0.5 off 12.5
    // x100000: v1 = 123456, v2 = 1.2346: 1.2346e5 = 123460, within 185 of 123456
    expect(compareTwoNumbers(1.2346, 123456)).toBe(true);
  });
  it('equal after rounding both up at 3 decimals', () => {
    // ceil(0.0411*1000)/1000 = 0.042, ceil(0.04101*1000)/1000 = 0.042; relative gap 0.2 % fails eps
    expect(compareTwoNumbers(0.04101, 0.0411)).toBe(true);
  });
});

describe('DocMath-Eval normalize + get_acc', () => {
  it('cleans currency, units, percent and "="', () => {
    expect(cleanDocmathAnswer('$1,234.5 million.')).toBe('1234.5');
    expect(cleanDocmathAnswer('x = 12.5%')).toBe('12.5');
    expect(cleanDocmathAnswer('approximately 3.2 years')).toBe('3.2');
    expect(cleanDocmathAnswer('3 x 10^4')).toBe('3*math.pow(10, 4)');
    expect(cleanDocmathAnswer('USD 5')).toBe('5'); // "US" goes first, leaving "D 5", then the unit rule
    expect(cleanDocmathAnswer('')).toBe('0');
  });
  it('accuracy against numeric gold (hand-computed)', () => {
    expect(docmathAccuracy('The answer is 12.5%', 0.125)).toBe(0); // "The answer is 12.5" does not eval -> 0
    expect(docmathAccuracy('12.5%', 0.125)).toBe(1); // 12.5 vs 0.125: exact power of ten (100)
    expect(docmathAccuracy('$1,234.5 million', 1234.5)).toBe(1);
    expect(docmathAccuracy('3 x 10^4', 30000)).toBe(1);
    expect(docmathAccuracy('1.5e3', 1500)).toBe(1);
    expect(docmathAccuracy('007', 7)).toBe(0); // SyntaxError in Python 3 -> prediction 0
    expect(docmathAccuracy('(a)', 1)).toBe(0); // an option string never equals a number
    expect(docmathAccuracy('1, 2', 1)).toBe(0); // a tuple becomes a list: not a number
    expect(docmathAccuracy('abc', 0)).toBe(1); // eval fails -> 0, which matches gold 0 (script quirk)
  });
  it('boolean gold', () => {
    expect(docmathAccuracy('yes', true)).toBe(1);
    expect(docmathAccuracy('It is False', false)).toBe(1);
    expect(docmathAccuracy('1', true)).toBe(1); // True == 1 in Python
    expect(normalizeDocmath('no')).toEqual({ kind: 'bool', v: false });
  });
});
