import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getBenchmark } from '../../eval/benchmarks.ts';
import { readLimited } from '../../eval/session.ts';
import { readJsonRecords } from './records.ts';
import { streamJsonRecords } from './stream.ts';

const repo = resolve(import.meta.dirname, '../../..');
const dir = mkdtempSync(join(tmpdir(), 'sharp-stream-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('streamJsonRecords', () => {
  it.each([
    'data/musique/musique_ans_v1.0_sample.jsonl',
    'data/hotpotqa/hotpot_dev_distractor_sample.json',
    'data/2wiki/2wiki_dev_sample.json',
    'data/docmath/docmath_sample.json',
    'data/webwalkerqa/webwalkerqa_sample.jsonl',
    'data/gaia/metadata.jsonl',
  ])('gives the same records and lines as the whole-file reader: %s', (f) => {
    const p = join(repo, f);
    expect([...streamJsonRecords(p)]).toEqual(readJsonRecords(p));
    expect([...streamJsonRecords(p, 3)]).toEqual(readJsonRecords(p).slice(0, 3));
  });

  it('handles brackets in strings, escapes, scalars and records split across 1 MiB pieces (multi-byte text)', () => {
    const big = 'é'.repeat(700_000); // 1.4 MB of UTF-8: every record crosses a piece boundary
    const arr = file(
      'a.json',
      `\uFEFF[\n {"a": "x]{,\\"}"},\n {"a":\n  [1, 2]}, 7, "s",\n\n {"b": "${big}"}, {"c": 1}\n]\n`,
    );
    expect([...streamJsonRecords(arr)]).toEqual(readJsonRecords(arr));
    expect([...streamJsonRecords(arr)].map((r) => r.line)).toEqual([2, 3, 4, 4, 6, 6]);
    const jsonl = file('b.jsonl', `{"b": "${big}"}\n\n{"c": 2}\n{"d": 3}`);
    expect([...streamJsonRecords(jsonl)]).toEqual(readJsonRecords(jsonl));
  });

  it('names the line of a bad record and an unclosed array', () => {
    const bad = file('c.jsonl', '{"a":1}\n{oops\n');
    expect(() => [...streamJsonRecords(bad)]).toThrow(
      new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2: not valid JSON`),
    );
    const open = file('d.json', '[{"a": 1}, {"b": 2}');
    expect(() => [...streamJsonRecords(open)]).toThrow(`${open}: not valid JSON (the array is not closed)`);
    // With a limit the reader stops before the damage.
    expect([...streamJsonRecords(open, 1)]).toEqual([{ line: 1, value: { a: 1 } }]);
  });

  it('eval --limit reads only what it needs: a record after the limit is never parsed', () => {
    const sample = readJsonRecords(join(repo, 'data/musique/musique_ans_v1.0_sample.jsonl')).slice(0, 3);
    const lines = sample.map((r) => JSON.stringify(r.value));
    // Record 5 is not JSON at all: reading it would fail.
    const p = file('e.jsonl', [...lines, lines[0], '{this is not json', ''].join('\n'));
    const eps = readLimited(getBenchmark('musique'), p, 2);
    expect(eps.map((e) => e.id)).toEqual(sample.slice(0, 2).map((r) => (r.value as { id: string }).id));
  });
});
