import { describe, expect, it } from 'vitest';
import { configSchema } from '../schema.ts';

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
