import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { pyFloat, pyRound, pySplit, pyStrip, pyRemoveWhitespace, pyMax, pyMin } from './pytext.ts';
import { hasPython } from '../../../test/reference/has-python.ts';

describe('pyFloat (Python float() semantics)', () => {
  it('parses what Python parses', () => {
    expect(pyFloat('1e3')).toBe(1000);
    expect(pyFloat(' 12 ')).toBe(12);
    expect(pyFloat('1_000.5')).toBe(1000.5); // PEP 515 underscores
    expect(pyFloat('1.')).toBe(1);
    expect(pyFloat('.5')).toBe(0.5);
    expect(pyFloat('+1E-2')).toBe(0.01);
    expect(pyFloat('\u0661\u0662')).toBe(12); // Arabic-Indic digits: float('١٢') == 12.0
    expect(pyFloat('1e400')).toBe(Infinity); // overflow is inf, not an error
    expect(pyFloat('inf')).toBe(Infinity);
    expect(pyFloat('-Infinity')).toBe(-Infinity);
    expect(Number.isNaN(pyFloat('NaN'))).toBe(true);
  });
  it('rejects what Python rejects', () => {
    for (const s of ['', ' ', '.', '1e', 'e3', '0x10', '1,000', '$5', '_1', '1_', '1__0', 'infinit', '1 000', '--1'])
      expect(pyFloat(s)).toBeNull();
  });
});

describe('pyRound (round half to even on the exact binary value)', () => {
  it('hand-computed ties and non-ties', () => {
    expect(pyRound(0.0625, 3)).toBe(0.062); // exact tie -> even
    expect(pyRound(0.1875, 3)).toBe(0.188); // exact tie -> even
    expect(pyRound(0.3125, 3)).toBe(0.312);
    expect(pyRound(0.0005, 3)).toBe(0.001); // 0.0005 is slightly above the tie in binary
    expect(pyRound(2.675, 2)).toBe(2.67); // 2.675 is slightly below in binary
    expect(pyRound(1.0005, 3)).toBe(1);
    expect(pyRound(2 / 3, 3)).toBe(0.667);
    expect(pyRound(-0.0625, 3)).toBe(-0.062);
  });
  it.skipIf(!hasPython())('agrees with Python round() on fractions k/n', () => {
    const xs: number[] = [];
    for (const n of [3, 7, 16, 20, 32, 48, 100, 128, 2417])
      for (let k = 0; k <= n; k += Math.max(1, Math.floor(n / 60))) xs.push(k / n);
    const py = execFileSync(
      'python3',
      ['-c', `import json,sys; print(json.dumps([round(x,3) for x in json.loads(sys.stdin.read())]))`],
      { input: JSON.stringify(xs) },
    ).toString();
    expect(xs.map((x) => pyRound(x, 3))).toEqual(JSON.parse(py));
  });
});

describe('whitespace and min/max', () => {
  it('uses Python whitespace, not JavaScript whitespace', () => {
    expect(pySplit(' a\x1cb\u00a0c\ufeffd ')).toEqual(['a', 'b', 'c\ufeffd']); // \x1c splits, \ufeff does not
    expect(pyStrip('\x85 x \u3000')).toBe('x');
    expect(pyRemoveWhitespace('sea gull\t')).toBe('seagull');
  });
  it('max/min keep the first argument unless the second is strictly better (NaN rules)', () => {
    expect(pyMax(2, Number.NaN)).toBe(2);
    expect(Number.isNaN(pyMax(Number.NaN, 2))).toBe(true);
    expect(pyMin(2, 1)).toBe(1);
  });
});
