import { createHash } from 'node:crypto';
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

  it(
    'composes each chain question by nesting its hops, e.g. "In which country is the birthplace of the founder of X ' +
      'located?"',
    () => {
      // Rebuild the question from the parsed hops: the first hop's subject, wrapped by each hop's
      // description, inside the last hop's question.
      let checked = 0;
      for (const r of records) {
        const hops = r.question_decomposition;
        if (hops.some((h) => h.paragraph_support_idx === null)) continue;
        const parsed = hops.map((h) => parseHopQuestion(h.question));
        let d = parsed[0]?.subject as string;
        for (const p of parsed.slice(0, -1))
          d = (RELATIONS[p?.relation as RelationId].describe as string).replace('{s}', d);
        expect(r.question).toBe(RELATIONS[parsed[parsed.length - 1]?.relation as RelationId].hop.replace('{s}', d));
        checked++;
      }
      expect(checked).toBeGreaterThan(100);
      // The brief's example shape, written out by hand from the templates.
      expect(
        RELATIONS.country.hop.replace(
          '{s}',
          RELATIONS.birthCity.describe!.replace('{s}', RELATIONS.founder.describe!.replace('{s}', 'Zorvex Labs')),
        ),
      ).toBe('In which country is the birthplace of the founder of Zorvex Labs located?');
    },
  );

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
    expect(() => generateSynth({ seed: 1, n: 5, minHops: 4, maxHops: 3 })).toThrow(
      'synth: min-hops (4) is greater than max-hops (3)',
    );
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

const sha = (x: unknown): string => createHash('sha256').update(JSON.stringify(x)).digest('hex').slice(0, 16);
const small = { countries: 3, cities: 6, people: 14, companies: 6 };

describe('generateSynth question shapes', () => {
  it('by default (and with chains alone) writes exactly the records of the chain-only generator', () => {
    // Hashes of the chain-only generator's output, taken before comparisons and aggregations existed.
    const before: [Parameters<typeof generateSynth>[0], string][] = [
      [{ seed: 1, n: 300 }, '2008233a9c8cc9b1'],
      [{ seed: 1, n: 200, worlds: 'fresh', names: 'train' }, 'c4f2f2c4b01c5268'],
      [
        { seed: 3, n: 100, worlds: 'fresh', names: 'held-out', namePool: 2000, minHops: 2, maxHops: 3 },
        '0363d96c9cb225fc',
      ],
    ];
    for (const [opts, hash] of before) {
      expect(sha(generateSynth(opts))).toBe(hash);
      expect(
        sha(
          generateSynth({
            ...opts,
            shapes: { chain: 1, comparison: 0, aggregation: 0 },
            compareItems: { min: 3, max: 3 },
            misleadingRate: 0,
          }),
        ),
      ).toBe(hash);
    }
  });

  it('mixes shapes at their weights, each record valid, the first k independent of n', () => {
    const mix = generateSynth({ seed: 9, n: 1200, shapes: { chain: 1, comparison: 1, aggregation: 2 } });
    const kind = (r: StrictMusiqueRecord) =>
      shape(r).endsWith('cmp') ? 'comparison' : shape(r).endsWith('agg') ? 'aggregation' : 'chain';
    const count = (k: string) => mix.filter((r) => kind(r) === k).length;
    for (const [k, p] of [
      ['chain', 0.25],
      ['comparison', 0.25],
      ['aggregation', 0.5],
    ] as const) {
      expect(Math.abs(count(k) / mix.length - p)).toBeLessThan(4 * Math.sqrt((p * (1 - p)) / mix.length));
    }
    for (const r of mix) {
      const parsed = synthRecordSchema.safeParse(r);
      if (!parsed.success) throw new Error(`${r.id}: ${parsed.error.issues[0]?.message}`);
      if (kind(r) === 'chain') continue;
      // The lookups before the last hop: the first of each item names its entity; the last hop joins them.
      const hops = r.question_decomposition;
      expect(hops[hops.length - 1]?.paragraph_support_idx).toBeNull();
      expect(hops.slice(0, -1).every((h) => h.paragraph_support_idx !== null)).toBe(true);
      expect(hops[0]?.question).not.toMatch(/#\d/);
    }
    expect([...new Set(mix.map(shape))].sort()).toEqual([
      '2hop',
      '3hop1',
      '3hop2',
      '3hopagg',
      '3hopcmp',
      '4hop1',
      '4hop3',
      '4hopagg',
      '4hopcmp',
    ]);
    expect(generateSynth({ seed: 9, n: 100, shapes: { chain: 1, comparison: 1, aggregation: 2 } })).toEqual(
      mix.slice(0, 100),
    );
    const fresh = {
      seed: 9,
      n: 40,
      worlds: 'fresh' as const,
      names: 'held-out' as const,
      world: small,
      shapes: { comparison: 1, aggregation: 1 },
    };
    expect(generateSynth({ ...fresh, n: 15 })).toEqual(generateSynth(fresh).slice(0, 15));
  });

  it('draws the configured item counts and hop counts', () => {
    const three = generateSynth({ seed: 2, n: 60, shapes: { comparison: 1 }, compareItems: { min: 3, max: 3 } });
    // Three independent lookups (no #k) and the comparison hop naming all three.
    for (const r of three) {
      expect(shape(r)).toBe('4hopcmp');
      expect(r.question_decomposition.slice(0, 3).every((h) => !/#\d/.test(h.question))).toBe(true);
      expect(r.question_decomposition[3]?.question.match(/#\d/g)).toEqual(['#1', '#2', '#3']);
    }
    const two = generateSynth({ seed: 2, n: 60, maxHops: 3, shapes: { comparison: 1, aggregation: 1 } });
    expect(new Set(two.map(shape))).toEqual(new Set(['3hopcmp', '3hopagg']));
    const long = generateSynth({
      seed: 2,
      n: 60,
      minHops: 4,
      shapes: { comparison: 1 },
      compareItems: { min: 2, max: 2 },
    });
    // Two items in four hops: one item is reached through one more hop.
    for (const r of long) expect(r.question_decomposition.filter((h) => /#\d/.test(h.question))).toHaveLength(2);
  });

  it('rejects bad mixes with one-line errors', () => {
    expect(() => generateSynth({ seed: 1, n: 5, shapes: { chain: 0 } })).toThrow('synth: shape weights are all 0');
    expect(() => generateSynth({ seed: 1, n: 5, shapes: { comparison: -1 } })).toThrow(
      'synth: shape weight comparison must be a finite number >= 0, got -1',
    );
    expect(() => generateSynth({ seed: 1, n: 5, compareItems: { min: 2, max: 4 } })).toThrow(
      'synth: compare items must be integers with 2 <= min <= max <= 3, got 2-4',
    );
    expect(() => generateSynth({ seed: 1, n: 5, maxHops: 2, shapes: { comparison: 1 } })).toThrow(
      'synth: a comparison or aggregation of 2 items needs 3 hops, but max-hops is 2',
    );
    expect(() => generateSynth({ seed: 1, n: 5, misleadingRate: 1.5 })).toThrow(
      'synth: misleading rate must be in [0, 1], got 1.5',
    );
  });
});
