import { describe, it, expect } from 'vitest';
import { coverEmSuccess, emSuccess, f1Success, successFunction } from './success.ts';

describe('success functions', () => {
  it('EM against answer and aliases; null fails', () => {
    expect(emSuccess('the Big Apple', ['New York City', 'big apple'])).toBe(1);
    expect(emSuccess('New York', ['New York City'])).toBe(0);
    expect(emSuccess(null, ['x'])).toBe(0);
  });
  it('F1 >= threshold', () => {
    const r = f1Success(0.8);
    expect(r('New York City', ['new york'])).toBe(1); // F1 0.8 reaches 0.8
    expect(f1Success(0.81)('New York City', ['new york'])).toBe(0);
    expect(r('boston', [])).toBe(0);
    expect(() => f1Success(1.5)).toThrow(/f1Threshold/);
  });
  it('cover-EM: gold inside prediction on token boundaries', () => {
    expect(coverEmSuccess('It was built in 1889 in Paris.', ['1889'])).toBe(1);
    expect(coverEmSuccess('in 18890', ['1889'])).toBe(0);
    expect(coverEmSuccess('anything', ['the'])).toBe(0); // gold normalises to empty
  });
  it('registry by config name', () => {
    expect(successFunction('em', { f1Threshold: 0.5 })).toBe(emSuccess);
    expect(successFunction('f1', { f1Threshold: 0.5 })('new york city', ['new york'])).toBe(1);
    expect(successFunction('cover_em', { f1Threshold: 0.5 })).toBe(coverEmSuccess);
  });
});
