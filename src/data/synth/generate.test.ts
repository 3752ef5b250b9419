import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSynth } from './generate.ts';
import { writeJsonlAtomic } from '../../fs/atomic.ts';
import { synthRecordSchema, type StrictMusiqueRecord } from './record.ts';
import { parseHopQuestion } from './reader.ts';
import { RELATIONS, type RelationId } from './relations.ts';

const records = generateSynth({ seed: 1, n: 300 });

function shape(r: StrictMusiqueRecord): string {
  return r.id.split('__')[0] as string;
}

describe('generateSynth', () => {
  it('writes n records that validate against the strict MuSiQue schema and our consistency rules', () => {
    expect(records.length).toBe(300);
    for (const r of records) {
      const parsed = synthRecordSchema.safeParse(r);
      if (!parsed.success) throw new Error(`${r.id}: ${parsed.error.issues[0]?.message}`);
      expect(r.paragraphs.length).toBe(20);
      expect(r.answerable).toBe(true);
      expect(new Set(r.paragraphs.map((p) => p.title)).size).toBe(20);
    }
    expect(new Set(records.map((r) => r.id)).size).toBe(300);
  });

  it('covers every hop count and MuSiQue shape, with arithmetic questions among them', () => {
    const shapes = new Set(records.map(shape));
    expect([...shapes].sort()).toEqual(['2hop', '3hop1', '3hop2', '4hop1', '4hop3']);
    const arithmetic = records.filter((r) => r.question_decomposition.some((h) => h.paragraph_support_idx === null));
    expect(arithmetic.length).toBeGreaterThan(30);
    // Arithmetic hops are always last and answered with an integer.
    for (const r of arithmetic) {
      const last = r.question_decomposition[r.question_decomposition.length - 1];
      expect(last?.paragraph_support_idx).toBeNull();
      expect(r.answer).toMatch(/^\d+$/);
      expect(r.question_decomposition.slice(0, -1).every((h) => h.paragraph_support_idx !== null)).toBe(true);
    }
  });

  it('uses #k references to earlier hops, as MuSiQue does', () => {
    for (const r of records) {
      r.question_decomposition.forEach((h, i) => {
        for (const m of h.question.matchAll(/#(\d+)/g)) expect(Number(m[1])).toBeLessThanOrEqual(i);
      });
      // The first hop names its entity; every later hop uses an earlier answer.
      expect(r.question_decomposition[0]?.question).not.toMatch(/#\d/);
      if (shape(r) === '2hop' || shape(r).endsWith('hop1')) {
        r.question_decomposition.slice(1).forEach((h, i) => expect(h.question).toContain(`#${i + 1}`));
      }
    }
  });

  it('composes each chain question by nesting its hops, e.g. "In which country is the birthplace of the founder of X located?"', () => {
    // Rebuild the question from the parsed hops: the first hop's subject, wrapped by each hop's
    // description, inside the last hop's question.
    let checked = 0;
    for (const r of records) {
      const hops = r.question_decomposition;
      if (hops.some((h) => h.paragraph_support_idx === null)) continue;
      const parsed = hops.map((h) => parseHopQuestion(h.question));
      let d = parsed[0]?.subject as string;
      for (const p of parsed.slice(0, -1)) d = (RELATIONS[p?.relation as RelationId].describe as string).replace('{s}', d);
      expect(r.question).toBe(RELATIONS[parsed[parsed.length - 1]?.relation as RelationId].hop.replace('{s}', d));
      checked++;
    }
    expect(checked).toBeGreaterThan(100);
    // The brief's example shape, written out by hand from the templates.
    expect(RELATIONS.country.hop.replace('{s}', RELATIONS.birthCity.describe!.replace('{s}', RELATIONS.founder.describe!.replace('{s}', 'Zorvex Labs')))).toBe(
      'In which country is the birthplace of the founder of Zorvex Labs located?',
    );
  });

  it('is deterministic per seed, and the first k records do not depend on n', () => {
    expect(generateSynth({ seed: 1, n: 300 })).toEqual(records);
    expect(generateSynth({ seed: 1, n: 50 })).toEqual(records.slice(0, 50));
    expect(generateSynth({ seed: 2, n: 50 }).map((r) => r.id)).not.toEqual(records.slice(0, 50).map((r) => r.id));
  });

  it('respects min/max hops', () => {
    const two = generateSynth({ seed: 3, n: 40, minHops: 2, maxHops: 2 });
    expect(new Set(two.map((r) => r.question_decomposition.length))).toEqual(new Set([2]));
    const four = generateSynth({ seed: 3, n: 40, minHops: 4, maxHops: 4 });
    expect(new Set(four.map((r) => r.question_decomposition.length))).toEqual(new Set([4]));
  });

  it('rejects bad options with one-line errors', () => {
    expect(() => generateSynth({ seed: 1, n: 0 })).toThrow('synth: n must be a positive integer, got 0');
    expect(() => generateSynth({ seed: 1, n: 5, minHops: 4, maxHops: 3 })).toThrow('synth: min-hops (4) is greater than max-hops (3)');
    expect(() => generateSynth({ seed: 1, n: 5, maxHops: 5 })).toThrow('synth: max-hops must be 2, 3 or 4, got 5');
    // A tiny world cannot hold 20 paragraphs per record.
    expect(() => generateSynth({ seed: 1, n: 5, world: { countries: 2, cities: 3, people: 5, companies: 2 } })).toThrow(
      'synth: the world has 12 paragraphs, fewer than 20 per record',
    );
  });

  it('writes JSONL atomically (no temp file left behind) and the lines parse back', () => {
    const dir = mkdtempSync(join(tmpdir(), 'synth-'));
    const file = join(dir, 'out', 'synth.jsonl');
    writeJsonlAtomic(file, records.slice(0, 3));
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(records.slice(0, 3));
    expect(readdirSync(join(dir, 'out'))).toEqual(['synth.jsonl']);
  });
});
