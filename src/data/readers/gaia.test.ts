import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readGaia } from './gaia.ts';

const repo = resolve(import.meta.dirname, '../../..');
const sample = join(repo, 'data/gaia/metadata.jsonl');

describe('readGaia', () => {
  it('text-only by default: tasks with an attachment are dropped', () => {
    const eps = readGaia(sample);
    expect(eps.map((e) => e.id)).toEqual([
      'vel-gaia-0001',
      'vel-gaia-0002',
      'vel-gaia-0004',
      'vel-gaia-0005',
      'vel-gaia-0007',
      'vel-gaia-0008',
    ]);
    expect(eps[1]).toMatchObject({ answers: ['Ostrava Vale, Lowmere'], meta: { level: 1 } });
    expect(readGaia(sample, { textOnly: false })).toHaveLength(8);
  });
  it('a bad Level names file, line and field', () => {
    const p = join(mkdtempSync(join(tmpdir(), 'sharp-gaia-')), 'metadata.jsonl');
    writeFileSync(p, '{"task_id":"t","Question":"q","Level":"high","Final answer":"a","file_name":""}\n');
    expect(() => readGaia(p)).toThrow(new RegExp(`metadata.jsonl:1: Level: `));
  });
});
