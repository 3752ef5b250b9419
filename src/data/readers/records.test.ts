import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { readJsonRecords, readRecords, fieldPath } from './records.ts';

const dir = mkdtempSync(join(tmpdir(), 'sharp-records-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('readJsonRecords', () => {
  it('JSONL: one record per non-blank line, with its line number', () => {
    const p = file('a.jsonl', '{"a":1}\n\n{"a":2}\n');
    expect(readJsonRecords(p)).toEqual([
      { line: 1, value: { a: 1 } },
      { line: 3, value: { a: 2 } },
    ]);
  });
  it('JSON array: line where each element starts (strings with brackets do not confuse it)', () => {
    const p = file('b.json', '[\n {"a": "x]{,"},\n {"a":\n  [1, 2]},\n\n {"a": 3}\n]\n');
    expect(readJsonRecords(p).map((r) => r.line)).toEqual([2, 3, 6]);
  });
  it('one-line errors naming file, line and field', () => {
    const schema = z.object({ a: z.array(z.object({ b: z.number() })) });
    const p = file('c.jsonl', '{"a":[{"b":1}]}\n{"a":[{"b":1},{"b":"x"}]}\n');
    expect(() => readRecords(p, schema)).toThrow(`${p}:2: a[1].b: Invalid input: expected number, received string`);
    const q = file('d.jsonl', '{"a":[]}\n{oops\n');
    expect(() => readJsonRecords(q)).toThrow(
      new RegExp(`^${q.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2: not valid JSON`),
    );
    expect(() => readJsonRecords(join(dir, 'missing.jsonl'))).toThrow(/missing.jsonl: file not found/);
  });
  it('fieldPath', () => {
    expect(fieldPath(['paragraphs', 3, 'idx'])).toBe('paragraphs[3].idx');
    expect(fieldPath([])).toBe('(record)');
  });
});
