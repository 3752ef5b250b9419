import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CausalLM } from '../model/causal-lm.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../tokenizer/fit.ts';
import { generateFlags, initModelFlags, withDefaults, type GivenFlags } from './commands.ts';
import { run as runGenerate } from './generate.ts';
import { run as runInitModel } from './init-model.ts';

const generateCmd = (opts: GivenFlags<typeof generateFlags>): Promise<void> =>
  runGenerate(withDefaults(generateFlags, opts));
const initModel = (opts: GivenFlags<typeof initModelFlags>): Promise<void> =>
  runInitModel(withDefaults(initModelFlags, opts));

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TINY = resolve(repoRoot, '../shared/models/tinystories-260k');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-init-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function capture(f: () => Promise<void>): Promise<string> {
  let text = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
    text += String(s);
    return true;
  });
  try {
    await f();
  } finally {
    spy.mockRestore();
  }
  return text;
}

describe('sharp init-model + sharp generate', () => {
  it('writes a complete HF folder that loads and generates', async () => {
    const tokDir = join(dir, 'tok');
    await writeTokenizerFiles(tokDir, fitBpeTokenizer(['hello world, the answer is 42', 'who wrote the book'], 300));
    const out = join(dir, 'm');
    const msg = await capture(() =>
      initModel({
        arch: 'qwen3',
        layers: 2,
        hidden: 64,
        heads: 4,
        kvHeads: 2,
        intermediate: 96,
        vocab: 300,
        tokenizer: tokDir,
        seed: 1,
        out,
        backend: 'wasm',
      }),
    );
    expect(msg).toContain('wrote qwen3 model');
    for (const f of [
      'config.json',
      'model.safetensors',
      'generation_config.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ])
      expect(existsSync(join(out, f)), f).toBe(true);
    const gen = JSON.parse(readFileSync(join(out, 'generation_config.json'), 'utf8')) as Record<string, unknown>;
    expect(gen.eos_token_id).toBe(2); // <|im_end|> of the fitted tokenizer
    const m = await CausalLM.load(out);
    expect(m.config).toMatchObject({
      family: 'qwen3',
      layers: 2,
      hidden: 64,
      heads: 4,
      kvHeads: 2,
      vocabSize: 300,
      qkNorm: true,
    });
    m.dispose();
    const text = await capture(() =>
      generateCmd({
        model: out,
        prompt: 'hello',
        chat: true,
        maxNewTokens: 5,
        temperature: 1,
        topP: 0.9,
        topK: 0,
        seed: 3,
        backend: 'wasm',
      }),
    );
    const again = await capture(() =>
      generateCmd({
        model: out,
        prompt: 'hello',
        chat: true,
        maxNewTokens: 5,
        temperature: 1,
        topP: 0.9,
        topK: 0,
        seed: 3,
        backend: 'wasm',
      }),
    );
    expect(text).toBe(again); // seeded
    expect(text.endsWith('\n')).toBe(true);
  });

  it('bad flags are UserErrors', async () => {
    await expect(
      initModel({
        arch: 'llama',
        layers: 2,
        hidden: 64,
        heads: 4,
        kvHeads: 3,
        intermediate: 96,
        vocab: 300,
        out: join(dir, 'x'),
      }),
    ).rejects.toThrow('--heads (4) must be a multiple of --kv-heads (3)');
    await expect(generateCmd({ model: join(dir, 'nope'), prompt: 'x' })).rejects.toThrow(/no config.json/);
  });

  it.skipIf(!existsSync(TINY))('generate prints the tinystories continuation', async () => {
    const text = await capture(() =>
      generateCmd({ model: TINY, prompt: 'Once upon a time', maxNewTokens: 16, temperature: 0, backend: 'wasm' }),
    );
    expect(text.startsWith(', there was a little girl named Lily.')).toBe(true);
  });
});
