import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readFrames, parseWikiLinks, splitReasoningTypes } from './frames.ts';
import { parseTsv } from './tsv.ts';

const repo = resolve(import.meta.dirname, '../../..');
const shared = join(repo, '../shared/data/frames/frames_824_qa.jsonl');

describe('readFrames', () => {
  it('shipped test.tsv: index ids, quoted prompts (with a newline and quotes), reasoning types, links', () => {
    const eps = readFrames(join(repo, 'data/frames/test.tsv'));
    expect(eps.map((e) => e.id)).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(eps[1].question).toBe(
      'Which Velorian provincial capital is the birthplace of the poet who wrote "Lanterns over Tolle"?',
    );
    expect(eps[2].question).toBe(
      'Of the four Velorian provinces, which was formed last?\nAnswer with the province name.',
    );
    expect(eps[2].answers).toEqual(['Upper Tolland']);
    expect(eps[2].meta?.reasoningTypes).toEqual(['Tabular reasoning', 'Temporal reasoning']);
    expect(eps[0].meta?.wikiLinks).toEqual([
      'https://example.org/wiki/Brightwater_Looms',
      'https://example.org/wiki/Ilsa_Marrow',
    ]);
    expect(eps[3].paragraphs).toEqual([]);
  });
  it.skipIf(!existsSync(shared))('real FRAMES JSONL {id, question, answer}: 824 records', () => {
    const eps = readFrames(shared);
    expect(eps).toHaveLength(824);
    expect(eps[0]).toMatchObject({ id: 'wiki____0', answers: ['Jane Ballou'] });
  });
  it('bad rows name file, line and column', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-frames-'));
    const a = join(dir, 'a.tsv');
    writeFileSync(a, '\tPrompt\tAnswer\n0\tq?\t\n');
    expect(() => readFrames(a)).toThrow(`${a}:2: Answer: empty`);
    const b = join(dir, 'b.tsv');
    writeFileSync(b, '\tQuestion\tAnswer\n');
    expect(() => readFrames(b)).toThrow(`${b}:1: column 'Prompt': missing from the header`);
    const c = join(dir, 'c.tsv');
    writeFileSync(c, '\tPrompt\tAnswer\n0\t"multi\nline"\tx\n1\tq\n');
    expect(() => readFrames(c)).toThrow(`${c}:4: row has 2 cells, header has 3`);
  });
  it('helpers', () => {
    expect(splitReasoningTypes('Numerical reasoning | Multiple constraints')).toEqual([
      'Numerical reasoning',
      'Multiple constraints',
    ]);
    expect(parseWikiLinks("['https://a.org/x', \"https://b.org/it's\"]")).toEqual([
      'https://a.org/x',
      "https://b.org/it's",
    ]);
    expect(parseTsv('a\t"b""c"\n\n', 'f').map((r) => r.cells)).toEqual([['a', 'b"c']]);
  });
});
