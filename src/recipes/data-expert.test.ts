import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { generateSynth } from '../data/synth/generate.ts';
import { writeJsonlAtomic } from '../fs/atomic.ts';
import { dataExpertFlags, withDefaults, type GivenFlags } from './commands.ts';
import { run as runDataExpert } from './data-expert.ts';

const run = (opts: GivenFlags<typeof dataExpertFlags>): Promise<void> =>
  runDataExpert(withDefaults(dataExpertFlags, opts));

const dir = mkdtempSync(join(tmpdir(), 'sharp-expert-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Line {
  messages: { role: string; content: string; train: boolean }[];
}

describe('sharp data expert', () => {
  it('writes one transcript per agent conversation with per-message loss masks', async () => {
    const records = generateSynth({ seed: 3, n: 30 });
    const input = join(dir, 'synth.jsonl');
    const out = join(dir, 'transcripts.jsonl');
    writeJsonlAtomic(input, records);
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    await run({ in: input, out });
    write.mockRestore();
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    // planner + one worker per hop, for every episode (the expert solves all of them)
    const hops = records.reduce((n, r) => n + r.question_decomposition.length, 0);
    expect(lines).toHaveLength(records.length + hops);
    for (const l of lines) {
      expect(Object.keys(l)).toEqual(['messages']);
      expect(l.messages[0]?.role).toBe('system');
      expect(l.messages[1]?.role).toBe('user');
      expect(l.messages.every((m) => m.train === (m.role === 'assistant'))).toBe(true);
      expect(l.messages.at(-1)?.content).toMatch(/^<answer>.+<\/answer>$/);
    }
    // the first transcript is the first episode's planner: question in, gold answer out
    expect(lines[0]?.messages[1]?.content).toBe(records[0]?.question);
    expect(lines[0]?.messages.at(-1)?.content).toBe(`<answer>${records[0]?.answer}</answer>`);
  });

  it('judges "solved" by the configured success function (credit.success), as sharp train does', async () => {
    // Gold answers in upper case: the expert's answer matches them after SQuAD normalisation (em)
    // but not as a raw string.
    const records = generateSynth({ seed: 4, n: 6 }).map((r) => ({
      ...r,
      answer: r.answer.toUpperCase(),
      answer_aliases: [],
    }));
    const input = join(dir, 'upper.jsonl');
    writeJsonlAtomic(input, records);
    let printed = '';
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((t: string | Uint8Array) => {
      printed += String(t);
      return true;
    });
    try {
      await run({ in: input, out: join(dir, 'upper-em.jsonl') });
      await run({ in: input, out: join(dir, 'upper-f1.jsonl'), set: ['credit.success=f1', 'credit.f1Threshold=1'] });
    } finally {
      write.mockRestore();
    }
    expect(printed).toContain('data expert: solved 6/6 episodes');
    expect(printed.match(/solved 6\/6 episodes/g)).toHaveLength(2);
  });

  it('fails in one line on bad input', async () => {
    const missing = join(dir, 'missing.jsonl');
    await expect(run({ in: missing, out: join(dir, 'x.jsonl') })).rejects.toThrow(
      /^data expert: .*missing\.jsonl: file not found$/,
    );
    const noDecomp = join(dir, 'nodecomp.jsonl');
    writeFileSync(
      noDecomp,
      JSON.stringify({
        id: '2hop__1_2',
        paragraphs: [],
        question: 'q?',
        answer: 'a',
        answer_aliases: [],
        answerable: true,
      }) + '\n',
    );
    await expect(run({ in: noDecomp, out: join(dir, 'x.jsonl') })).rejects.toThrow(
      `data expert: ${noDecomp}: episode 2hop__1_2 has no question_decomposition (the expert follows it)`,
    );
  });
});
