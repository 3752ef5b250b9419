import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeJsonlAtomic } from '../../fs/atomic.ts';
import { readMusique } from '../readers/musique.ts';
import { generateSynth } from './generate.ts';
import { arithmeticExpression, comparisonAnswer, extractAnswer, substituteRefs } from './reader.ts';
import { plantedOf, synthRecordSchema, toEpisode, type SynthRecord } from './record.ts';
import { isUnreliableTitle } from './relations.ts';

const N = 2000;
const RATE = 0.3;
const opts = { seed: 4, n: N, shapes: { chain: 1, comparison: 1, aggregation: 1 } };
const clean = generateSynth(opts);
const misled = generateSynth({ ...opts, misleadingRate: RATE });

/** |observed - p| within 4 binomial standard deviations (a false alarm ~ 1e-4). */
function expectRate(hits: number, n: number, p: number): void {
  const sd = Math.sqrt((p * (1 - p)) / n);
  expect(Math.abs(hits / n - p)).toBeLessThan(4 * sd);
}

/** The final answer recomputed from hop answers (the last hop a comparison or arithmetic). */
function finalFrom(r: SynthRecord, answers: string[]): string | null {
  const last = substituteRefs(
    (r.question_decomposition[r.question_decomposition.length - 1] as { question: string }).question,
    answers,
  );
  const expr = arithmeticExpression(last);
  if (!expr) return comparisonAnswer(last);
  const nums = [...expr.matchAll(/\d+/g)].map((m) => Number(m[0]));
  if (expr.startsWith('max(')) return String(Math.max(...nums.slice(0, 3)) - Math.min(...nums.slice(0, 3)));
  if (/^\d+ - \d+$/.test(expr)) return String((nums[0] as number) - (nums[1] as number));
  return String((nums[0] as number) + (nums[1] as number));
}

describe('planted claims', () => {
  it('are planted at the configured rate, each in a titled unreliable paragraph that states the wrong value', () => {
    const planted = misled.filter((r) => r.planted);
    expectRate(planted.length, N, RATE);
    for (const r of planted) {
      const p = r.planted as NonNullable<SynthRecord['planted']>;
      const parsed = synthRecordSchema.safeParse(r);
      if (!parsed.success) throw new Error(`${r.id}: ${parsed.error.issues[0]?.message}`);
      const para = r.paragraphs[p.paragraph_idx] as SynthRecord['paragraphs'][number];
      expect(isUnreliableTitle(para.title)).toBe(true);
      expect(para.title.endsWith(` ${p.subject}`)).toBe(true);
      expect(para.paragraph_text.endsWith('This claim has not been verified.')).toBe(true);
      // Read like any paragraph, the planted one states the wrong value; the support paragraph the right one.
      const gold = r.question_decomposition.map((h) => h.answer);
      const hop = r.question_decomposition[p.hop] as SynthRecord['question_decomposition'][number];
      const asked = substituteRefs(hop.question, gold);
      expect(extractAnswer(asked, para.paragraph_text)).toBe(p.wrong);
      expect(
        extractAnswer(
          asked,
          (r.paragraphs[hop.paragraph_support_idx as number] as { paragraph_text: string }).paragraph_text,
        ),
      ).toBe(p.right);
      expect(p.wrong).not.toBe(p.right);
    }
  });

  it('are planted at the rate in every shape, independently of the question drawn (shared and fresh worlds)', () => {
    const fresh = generateSynth({
      ...opts,
      n: 1500,
      worlds: 'fresh',
      names: 'train',
      world: { countries: 3, cities: 6, people: 14, companies: 6 },
      misleadingRate: RATE,
    });
    for (const records of [misled, fresh]) {
      for (const kind of ['cmp', 'agg', 'chain']) {
        const of = records.filter((r) =>
          kind === 'chain' ? !/hop(cmp|agg)__/.test(r.id) : r.id.includes(`hop${kind}__`),
        );
        expectRate(of.filter((r) => r.planted).length, of.length, RATE);
      }
    }
  });

  it('flip the answer of comparisons and aggregations when a year is planted', () => {
    let years = 0;
    for (const r of misled) {
      if (!r.planted || !/^\d{4}$/.test(r.planted.right) || !/hop(cmp|agg)__/.test(r.id)) continue;
      const answers = r.question_decomposition.map((h) => h.answer);
      expect(finalFrom(r, answers)).toBe(r.answer);
      answers[r.planted.hop] = r.planted.wrong;
      expect(finalFrom(r, answers)).not.toBe(r.answer);
      years++;
    }
    expect(years).toBeGreaterThan(200);
  });

  it('change nothing else: the same records as without them, one non-supporting paragraph replaced', () => {
    expect(misled.map((r) => r.id)).toEqual(clean.map((r) => r.id));
    misled.forEach((r, i) => {
      const c = clean[i] as SynthRecord;
      if (!r.planted) return expect(r).toEqual(c);
      const { planted, paragraphs, ...rest } = r;
      const { paragraphs: cleanParagraphs, ...cleanRest } = c;
      expect(rest).toEqual(cleanRest);
      paragraphs.forEach((p, j) => {
        if (j !== planted.paragraph_idx) expect(p).toEqual(cleanParagraphs[j]);
        else expect(cleanParagraphs[j]?.is_supporting).toBe(false);
      });
    });
  });

  it('are seeded: the same claims again, other records under another seed, the first k independent of n', () => {
    expect(generateSynth({ ...opts, n: 300, misleadingRate: RATE })).toEqual(misled.slice(0, 300));
    const other = generateSynth({ ...opts, seed: 5, n: 300, misleadingRate: RATE });
    expect(other.map((r) => r.planted?.wrong ?? null)).not.toEqual(
      misled.slice(0, 300).map((r) => r.planted?.wrong ?? null),
    );
    const fresh = { ...opts, n: 60, worlds: 'fresh' as const, names: 'train' as const, misleadingRate: 0.5 };
    expect(generateSynth({ ...fresh, n: 25 })).toEqual(generateSynth(fresh).slice(0, 25));
  });

  it('survive the MuSiQue JSONL round trip into Episode.meta', () => {
    const some = misled.slice(0, 40);
    const file = join(mkdtempSync(join(tmpdir(), 'planted-')), 'synth.jsonl');
    writeJsonlAtomic(file, some);
    const read = readMusique(file);
    expect(read).toEqual(
      some
        .map(toEpisode)
        .map((e) => ({ ...e, meta: { ...e.meta, arithmetic: undefined } }))
        .map(({ meta, ...e }) => ({
          ...e,
          meta: Object.fromEntries(Object.entries(meta).filter(([k]) => k !== 'arithmetic')),
        })),
    );
    const withClaim = some.findIndex((r) => r.planted);
    const p = some[withClaim]?.planted as NonNullable<SynthRecord['planted']>;
    expect(plantedOf(read[withClaim] as (typeof read)[number])).toEqual({
      hop: p.hop,
      subject: p.subject,
      relation: p.relation,
      wrong: p.wrong,
      right: p.right,
      paragraphIdx: p.paragraph_idx,
    });
    expect(plantedOf(toEpisode(some[withClaim] as SynthRecord))).toEqual(
      plantedOf(read[withClaim] as (typeof read)[number]),
    );
    const without = some.findIndex((r) => !r.planted);
    expect(plantedOf(read[without] as (typeof read)[number])).toBeNull();
    expect(() => plantedOf({ id: 'x', meta: { planted: '{"hop":-1}' } })).toThrow('episode x: meta.planted:');
  });
});
