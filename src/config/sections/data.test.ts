import { describe, expect, it } from 'vitest';
import { configSchema } from '../schema.ts';
import { MAX_NAME_POOL } from './data.ts';

const synthetic = (s: Record<string, unknown>) => configSchema.safeParse({ data: { synthetic: s } });
const issues = (s: Record<string, unknown>) => {
  const r = synthetic(s);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('data.synthetic question mix', () => {
  it('defaults to chains only, 2-3 compared items and no planted claims', () => {
    const s = configSchema.parse({}).data.synthetic;
    expect(s.shapes).toEqual({ chain: 1, comparison: 0, aggregation: 0 });
    expect(s.compareItems).toEqual({ min: 2, max: 3 });
    expect(s.misleading).toEqual({ rate: 0 });
  });

  it('takes a mix and rejects impossible ones with a message naming the key', () => {
    expect(
      issues({
        shapes: { chain: 1, comparison: 2, aggregation: 1 },
        compareItems: { min: 3, max: 3 },
        misleading: { rate: 0.25 },
      }),
    ).toEqual([]);
    expect(issues({ shapes: { chain: 0 } })).toEqual(['data.synthetic.shapes: at least one shape weight must be > 0']);
    expect(issues({ compareItems: { min: 3, max: 2 } })).toEqual([
      'data.synthetic.compareItems: min (3) must be <= max (2)',
    ]);
    expect(issues({ maxHops: 2, shapes: { comparison: 1 } })).toEqual([
      'data.synthetic.compareItems: a comparison or aggregation of 2 items needs 3 hops, above maxHops (2)',
    ]);
    // Chains alone need no room for comparisons.
    expect(issues({ maxHops: 2 })).toEqual([]);
    expect(issues({ misleading: { rate: 1.5 } })).toHaveLength(1);
    expect(issues({ shapes: { chain: 1, star: 1 } })).toHaveLength(1);
  });
});

describe('data.synthetic.namePool', () => {
  const small = { countries: 3, cities: 6, people: 14, companies: 6 };

  it('is 0 (fresh syllables) or a pool the syllable space holds and a world can draw from', () => {
    expect(issues({ namePool: 0 })).toEqual([]);
    expect(issues({ namePool: 400, world: small })).toEqual([]);
    expect(issues({ namePool: MAX_NAME_POOL })).toEqual([]);
    expect(issues({ namePool: 3, world: small })).toEqual([
      'data.synthetic.namePool: a pool of 3 words cannot name a world of this size: it takes 46 words (2 per ' +
        'country and person, 1 per city and company) and keeps 256 in reserve, so at least 302',
    ]);
    expect(issues({ namePool: MAX_NAME_POOL + 1 })).toEqual([
      'data.synthetic.namePool: Too big: expected number to be <=100000',
    ]);
  });

  it('holds the words of one world and a reserve, so a held-out world never runs out of names', () => {
    // 2 x 3 + 6 + 2 x 14 + 6 = 46 words, + 256 in reserve.
    expect(issues({ namePool: 302, world: small })).toEqual([]);
    expect(issues({ namePool: 301, world: small })).toEqual([
      'data.synthetic.namePool: a pool of 301 words cannot name a world of this size: it takes 46 words (2 per ' +
        'country and person, 1 per city and company) and keeps 256 in reserve, so at least 302',
    ]);
    // The default world takes 624 words.
    expect(issues({ namePool: 400 })).toHaveLength(1);
  });
});
