import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildTinyModel, TINY_MODEL_DIR } from './build-tiny-model.ts';

const shipped = resolve(import.meta.dirname, '..', TINY_MODEL_DIR);

describe('models/tiny-random', () => {
  it.skipIf(!existsSync(shipped))(
    'is what scripts/build-tiny-model.ts builds, byte for byte (reproducible)',
    async () => {
      const out = join(mkdtempSync(join(tmpdir(), 'sharp-tiny-')), 'tiny-random');
      await buildTinyModel(out);
      const files = readdirSync(shipped).sort();
      expect(readdirSync(out).sort()).toEqual(files);
      expect(files).toEqual([
        'config.json',
        'generation_config.json',
        'model.safetensors',
        'tokenizer.json',
        'tokenizer_config.json',
      ]);
      for (const f of files) expect(readFileSync(join(out, f)).equals(readFileSync(join(shipped, f))), f).toBe(true);
      // Small enough to ship: 2 layers, d=64, vocab 1024 tied: 1024*64 + 2*(4*64*64... ) floats, < 1 MB.
      const cfg = JSON.parse(readFileSync(join(shipped, 'config.json'), 'utf8')) as Record<string, unknown>;
      expect(cfg).toMatchObject({
        model_type: 'llama',
        num_hidden_layers: 2,
        hidden_size: 64,
        vocab_size: 1024,
        tie_word_embeddings: true,
      });
      expect(readFileSync(join(shipped, 'model.safetensors')).length).toBeLessThan(1_000_000);
    },
    60_000,
  );
});
