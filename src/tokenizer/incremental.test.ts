import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fitBpeTokenizer, writeTokenizerFiles } from './fit.ts';
import { IncrementalDecoder, findStop } from './incremental.ts';
import { Tokenizer } from './tokenizer.ts';

const REAL = resolve(import.meta.dirname, '../../../shared/models/tinystories-260k');
const TEXTS = [
  'Once upon a time, there was a little girl named Lily.',
  'multi-byte: 東京 🤗🚀 naïve e\u0301 done',
  '  spaces\tand\nlines <search>q</search>',
];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-inc-'));
  await writeTokenizerFiles(
    dir,
    fitBpeTokenizer(['Once upon a time there was a little girl named Lily who liked to search'], 320),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function streamAll(tok: Tokenizer, ids: number[], skipSpecialTokens = false): { deltas: string[]; text: string } {
  const dec = new IncrementalDecoder(tok, { skipSpecialTokens });
  const deltas = ids.map((id) => dec.push(id));
  deltas.push(dec.flush());
  expect(dec.length).toBe(ids.length);
  return { deltas, text: dec.text };
}

describe('IncrementalDecoder', () => {
  it('byte-level BPE: the deltas add up to the full decode and never release half a character', async () => {
    const tok = await Tokenizer.load(dir);
    for (const text of TEXTS) {
      const ids = tok.encode(text);
      const { deltas, text: streamed } = streamAll(tok, ids);
      expect(streamed).toBe(tok.decode(ids));
      expect(deltas.join('')).toBe(text);
      for (const d of deltas) expect(d).not.toContain('\uFFFD');
    }
    // The emoji is 4 bytes = several byte-level tokens here: it must arrive whole, in one delta.
    const ids = tok.encode('🤗');
    expect(ids.length).toBeGreaterThan(1);
    const { deltas } = streamAll(tok, ids);
    expect(deltas.filter((d) => d !== '')).toEqual(['🤗']);
  });

  it.skipIf(!existsSync(join(REAL, 'tokenizer.json')))(
    'sentencepiece-style (leading-space strip, byte fallback) matches the full decode',
    async () => {
      const tok = await Tokenizer.load(REAL);
      for (const text of TEXTS) {
        const ids = tok.encode(text);
        const { deltas, text: streamed } = streamAll(tok, ids, true);
        expect(streamed).toBe(tok.decode(ids, { skipSpecialTokens: true }));
        expect(streamed).toBe(text);
        for (const d of deltas) expect(d).not.toContain('\uFFFD');
      }
    },
  );

  it('flush releases an incomplete character as U+FFFD, like a full decode', async () => {
    const tok = await Tokenizer.load(dir);
    const ids = tok.encode('🤗');
    const dec = new IncrementalDecoder(tok);
    for (const id of ids.slice(0, -1)) expect(dec.push(id)).toBe('');
    expect(dec.flush()).toBe(tok.decode(ids.slice(0, -1)));
    expect(dec.text).toContain('\uFFFD');
  });
});

describe('findStop', () => {
  it('finds the earliest stop string, scanning only new text plus the overlap', () => {
    expect(findStop('abc</answer>tail', ['</answer>', 'tail'])).toEqual({ index: 3, stop: '</answer>' });
    expect(findStop('no stop here', ['</answer>'])).toBeUndefined();
    // 'xx</ans' was seen before (newFrom = 7); the stop completes across the boundary and is found.
    expect(findStop('xx</answer>', ['</answer>'], 7)).toEqual({ index: 2, stop: '</answer>' });
    // A stop that ended entirely before newFrom is not re-reported.
    expect(findStop('</a> and more', ['</a>'], 10)).toBeUndefined();
    expect(findStop('abc', [''])).toBeUndefined();
  });
});
