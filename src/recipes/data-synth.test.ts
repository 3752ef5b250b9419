import { describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UserError } from '../errors.ts';
import { synthRecordSchema } from '../data/synth/record.ts';
import { dataSynthFlags, withDefaults, type GivenFlags } from './commands.ts';
import { run as runSynth } from './data-synth.ts';

const run = (opts: GivenFlags<typeof dataSynthFlags>): Promise<void> => runSynth(withDefaults(dataSynthFlags, opts));

describe('sharp data synth', () => {
  it('writes N validated records, byte-identical for the same seed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'data-synth-'));
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      await run({ seed: 9, n: 25, out: join(dir, 'a.jsonl') });
      await run({ seed: 9, n: 25, out: join(dir, 'b.jsonl'), minHops: 2, maxHops: 4 });
      await run({ seed: 10, n: 25, out: join(dir, 'c.jsonl') });
      expect(String(write.mock.calls[0]?.[0])).toMatch(
        /^data synth: wrote 25 records \(.*2hop \d+.*\) to .*a\.jsonl\n$/,
      );
    } finally {
      write.mockRestore();
    }
    const a = readFileSync(join(dir, 'a.jsonl'), 'utf8');
    expect(readFileSync(join(dir, 'b.jsonl'), 'utf8')).toBe(a);
    expect(readFileSync(join(dir, 'c.jsonl'), 'utf8')).not.toBe(a);
    const lines = a.trimEnd().split('\n');
    expect(lines.length).toBe(25);
    for (const l of lines) expect(synthRecordSchema.safeParse(JSON.parse(l)).success).toBe(true);
    // Beside them only the manifest that lets a later run replace them (src/fs/output-guard.ts).
    expect(readdirSync(dir).sort()).toEqual(['.sharp-output.json', 'a.jsonl', 'b.jsonl', 'c.jsonl']);
  });

  it('writes the question shapes the weights ask for, with planted claims at the given rate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'data-synth-'));
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      await run({
        seed: 3,
        n: 30,
        out: join(dir, 'w.jsonl'),
        worlds: 'fresh',
        chain: 0,
        comparison: 1,
        aggregation: 1,
        misleading: 1,
        maxHops: 3,
      });
      await run({ seed: 3, n: 10, out: join(dir, 'c.jsonl'), worlds: 'fresh' });
    } finally {
      write.mockRestore();
    }
    const read = (f: string) =>
      readFileSync(join(dir, f), 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => synthRecordSchema.parse(JSON.parse(l)));
    const mixed = read('w.jsonl');
    const shape = (id: string) => /^\dhop(cmp|agg)__/.exec(id)?.[1] ?? 'chain';
    expect(mixed).toHaveLength(30);
    expect(mixed.every((r) => r.planted !== undefined)).toBe(true);
    expect(mixed.filter((r) => shape(r.id) === 'cmp').length).toBeGreaterThan(5);
    expect(mixed.filter((r) => shape(r.id) === 'agg').length).toBeGreaterThan(5);
    expect(mixed.filter((r) => shape(r.id) === 'chain')).toHaveLength(0);
    expect(read('c.jsonl').every((r) => shape(r.id) === 'chain')).toBe(true);
    expect(read('c.jsonl').every((r) => r.planted === undefined)).toBe(true);
  });

  it.each([
    [{ n: 5, out: 'f', chain: 0 }, 'data synth: at least one of --chain, --comparison, --aggregation must be > 0'],
    [{ n: 5, out: 'f', comparison: -1 }, 'data synth: --comparison must be >= 0, got -1'],
    [{ n: 5, out: 'f', misleading: 1.5 }, 'data synth: --misleading must be in [0, 1], got 1.5'],
    [{ n: 0, out: 'f' }, 'data synth: --n must be in 1..100000, got 0'],
    [{ n: 1e9, out: 'f' }, 'data synth: --n must be in 1..100000, got 1000000000'],
    [{ n: 5, out: 'f', maxHops: 5 }, 'data synth: --max-hops must be 2, 3 or 4, got 5'],
    [{ n: 5, out: 'f', minHops: 4, maxHops: 3 }, 'data synth: --min-hops (4) is greater than --max-hops (3)'],
    [{ n: 5, out: 'f', seed: -1 }, 'data synth: --seed must be >= 0, got -1'],
  ])('rejects %j with a one-line UserError', async (opts, message) => {
    const err = await run(opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).message).toBe(message);
  });
});
