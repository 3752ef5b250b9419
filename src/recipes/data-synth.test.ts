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
      expect(String(write.mock.calls[0]?.[0])).toMatch(/^data synth: wrote 25 records \(.*2hop \d+.*\) to .*a\.jsonl\n$/);
    } finally {
      write.mockRestore();
    }
    const a = readFileSync(join(dir, 'a.jsonl'), 'utf8');
    expect(readFileSync(join(dir, 'b.jsonl'), 'utf8')).toBe(a);
    expect(readFileSync(join(dir, 'c.jsonl'), 'utf8')).not.toBe(a);
    const lines = a.trimEnd().split('\n');
    expect(lines.length).toBe(25);
    for (const l of lines) expect(synthRecordSchema.safeParse(JSON.parse(l)).success).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['a.jsonl', 'b.jsonl', 'c.jsonl']);
  });

  it.each([
    [{ n: 0, out: 'f' }, 'data synth: --n must be >= 1, got 0'],
    [{ n: 5, out: 'f', maxHops: 5 }, 'data synth: --max-hops must be 2, 3 or 4, got 5'],
    [{ n: 5, out: 'f', minHops: 4, maxHops: 3 }, 'data synth: --min-hops (4) is greater than --max-hops (3)'],
    [{ n: 5, out: 'f', seed: -1 }, 'data synth: --seed must be >= 0, got -1'],
  ])('rejects %j with a one-line UserError', async (opts, message) => {
    const err = await run(opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).message).toBe(message);
  });
});
