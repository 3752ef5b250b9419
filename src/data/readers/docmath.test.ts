import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readDocMath, docmathGold } from './docmath.ts';

const repo = resolve(import.meta.dirname, '../../..');

describe('readDocMath', () => {
  it('shipped sample: tables as paragraphs, evidence flags, numeric and boolean gold', () => {
    const eps = readDocMath(join(repo, 'data/docmath/docmath_sample.json'));
    expect(eps).toHaveLength(5);
    expect(eps[0].paragraphs[1].text.startsWith('| Year | Revenue')).toBe(true);
    expect(eps[0].paragraphs.map((p) => p.isSupporting)).toEqual([false, true, false]);
    expect(docmathGold(eps[0])).toBeCloseTo(10.472972972972974, 15);
    expect(docmathGold(eps[4])).toBe(true);
    expect(eps.map((e) => e.meta?.subset)).toEqual(['compshort', 'compshort', 'simpshort', 'simpshort', 'complong']);
  });
  it('evidence outside the paragraphs is a one-line error', () => {
    const p = join(mkdtempSync(join(tmpdir(), 'sharp-dm-')), 'bad.json');
    writeFileSync(p, '[{"question_id":"x","question":"q","paragraphs":["a"],"table_evidence":[3],"ground_truth":1}]');
    expect(() => readDocMath(p)).toThrow(`${p}:1: table_evidence/paragraph_evidence: index 3 outside paragraphs[0..0]`);
  });
});
