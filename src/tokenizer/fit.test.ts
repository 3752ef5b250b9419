import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../random/rng.ts';
import { CHATML_TEMPLATE, fitBpe, fitBpeTokenizer, writeTokenizerFiles, type TokenizerJson } from './fit.ts';
import { Tokenizer } from './tokenizer.ts';

/** ~200 KB of seeded pseudo-English: syllable words, numbers, punctuation, a few tags and accents. */
function syntheticCorpus(seed: number, bytes: number): string[] {
  const rng = new Rng(seed);
  const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'the', 'and', 'str', 'ing', 'qu', 'é', 'ön'];
  const texts: string[] = [];
  let total = 0;
  while (total < bytes) {
    const words: string[] = [];
    for (let w = rng.int(5, 25); w > 0; w--) {
      let word = '';
      for (let s = rng.int(1, 4); s > 0; s--) word += rng.pick(syll);
      const r = rng.float();
      if (r < 0.05) word = String(rng.int(0, 9999));
      else if (r < 0.08) word = `<search>${word}</search>`;
      else if (r < 0.15) word = word[0].toUpperCase() + word.slice(1);
      words.push(word);
    }
    const text = words.join(' ') + rng.pick(['.', '!', '?', ',', ';']) + '\n';
    texts.push(text);
    total += Buffer.byteLength(text);
  }
  return texts;
}

const ROUND_TRIP = [
  '',
  'Hello, world!',
  '  leading and trailing spaces  ',
  'tabs\tand\nnewlines\r\n\n',
  '<search>capital of France</search><result>Paris</result><answer>Paris</answer>',
  'unicode: naïve café, 東京タワー, Привет, مرحبا, עברית, 🤗🚀 e\u0301',
  "it's we'll they've I'd 3.14159 1e-9 $100,000",
  '<|im_start|>user\nhi<|im_end|>\n<|endoftext|>',
  '\u0000\u0001 control \u007f and \uFFFD',
];

let dir: string;
let tj: TokenizerJson;
let fitMs = 0;
let corpusBytes = 0;
let corpus200k: string[] = [];
let trainedTokens = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-fit-'));
  const corpus = syntheticCorpus(1, 200_000);
  corpusBytes = corpus.reduce((s, t) => s + Buffer.byteLength(t), 0);
  // CPU time, not wall-clock: other jobs on a shared machine slow the clock, not the work.
  const cpu0 = process.cpuUsage();
  const fitted = fitBpe(corpus, 2000);
  const cpu = process.cpuUsage(cpu0);
  fitMs = (cpu.user + cpu.system) / 1000;
  tj = fitted.tokenizerJson;
  corpus200k = corpus;
  trainedTokens = fitted.corpusTokens;
  await writeTokenizerFiles(dir, tj);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('fitBpeTokenizer', () => {
  it('fits 200 KB in seconds and fills the vocabulary exactly', () => {
    expect(corpusBytes).toBeGreaterThanOrEqual(200_000);
    expect(fitMs).toBeLessThan(15_000);
    const ids = Object.values(tj.model.vocab);
    expect(ids.length).toBe(2000);
    expect(new Set(ids).size).toBe(2000);
    expect(Math.max(...ids)).toBe(1999);
    expect(tj.model.merges.length).toBe(2000 - 3 - 256);
    expect(tj.model.vocab['<|endoftext|>']).toBe(0);
    expect(tj.model.vocab['<|im_start|>']).toBe(1);
    expect(tj.model.vocab['<|im_end|>']).toBe(2);
  });

  it('rejects a vocabulary smaller than the byte alphabet', () => {
    expect(() => fitBpeTokenizer(['x'], 100)).toThrow(/vocabSize 100 is too small; byte-level BPE needs at least 259/);
  });
});

describe('fitted tokenizer through Tokenizer.load', () => {
  it('round-trips arbitrary text exactly', async () => {
    const tok = await Tokenizer.load(dir);
    for (const text of ROUND_TRIP) {
      const ids = tok.encode(text);
      expect(ids.every((id) => id >= 0 && id < 2000)).toBe(true);
      expect(tok.decode(ids)).toBe(text);
    }
  });

  it('segments the training corpus exactly as training did (same merges, same pre-tokenizer)', async () => {
    const tok = await Tokenizer.load(dir);
    const n = corpus200k.reduce((s, t) => s + tok.encode(t).length, 0);
    expect(n).toBe(trainedTokens);
    expect(trainedTokens).toBeLessThan(corpusBytes / 2.5);
  });

  it('compresses unseen text from the same source with the learned merges', async () => {
    const tok = await Tokenizer.load(dir);
    const sample = syntheticCorpus(2, 5_000).join('');
    const ids = tok.encode(sample);
    // Without merges every byte would be one token; the fitted merges must cut that by more than half.
    expect(ids.length).toBeLessThan(Buffer.byteLength(sample) / 2);
    expect(tok.decode(ids)).toBe(sample);
  });

  it('has ChatML special tokens, EOS <|im_end|>, pad <|endoftext|> and no BOS', async () => {
    const tok = await Tokenizer.load(dir);
    expect(tok.vocabSize).toBe(2000);
    expect(tok.bosId).toBeUndefined();
    expect(tok.addsBos).toBe(false);
    expect(tok.eosIds).toEqual([2]);
    expect(tok.padId).toBe(0);
    expect([...tok.specialIds].sort()).toEqual([0, 1, 2]);
    expect(tok.encode('<|im_start|>assistant\n')[0]).toBe(1); // one id, not split into bytes
    expect(tok.encode('hi', { addSpecialTokens: true })).toEqual(tok.encode('hi', { addSpecialTokens: false }));
    expect(tok.decode([1, ...tok.encode('x'), 2], { skipSpecialTokens: true })).toBe('x');
    expect(tok.hasChatTemplate).toBe(true);
    expect(
      tok.applyChatTemplate(
        [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: '2+2?' },
        ],
        { addGenerationPrompt: true },
      ),
    ).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n');
    const cfg = JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    expect(cfg.chat_template).toBe(CHATML_TEMPLATE);
  });

  it('stores no template when asked, so the plain fallback applies', async () => {
    const d = await mkdtemp(join(dir, 'plain-'));
    await writeTokenizerFiles(d, fitBpeTokenizer(['tiny corpus'], 270), { chatTemplate: false });
    const tok = await Tokenizer.load(d);
    expect(tok.hasChatTemplate).toBe(false);
    expect(tok.vocabSize).toBeLessThanOrEqual(270);
    expect(tok.decode(tok.encode('never seen: 漢字'))).toBe('never seen: 漢字');
  });
});
