import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { configSchema } from '../../config/schema.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { loadTrainData } from './train-data.ts';
import { expertTranscripts } from './expert-transcripts.ts';
import { ensureModel, tokenizerCorpus } from './ensure-model.ts';
import { saveModelAtomic } from './save-model.ts';

beforeAll(async () => initBackend('wasm'));
afterAll(async () => closeCodeSandbox());

describe('ensureModel + saveModelAtomic', () => {
  it(
    'creates a random-init model with a BPE fitted to paragraphs, questions and rendered transcripts; reuses it ' +
      'after',
    async () => {
      const base = mkdtempSync(join(tmpdir(), 'sharp-init-'));
      const cfg = configSchema.parse({
        model: {
          path: join(base, 'm'),
          init: { enabled: true, layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, vocab: 350 },
        },
        data: { synthetic: { seed: 1, train: 6, heldOut: 1, minHops: 2, maxHops: 2 } },
      });
      const { train } = loadTrainData(cfg.data);
      const { transcripts } = await expertTranscripts(train, cfg);
      const corpus = tokenizerCorpus(train, transcripts);
      // 6 questions + 6 x 20 paragraphs + 18 transcripts rendered in ChatML.
      expect(corpus).toHaveLength(6 + 120 + 18);
      expect(corpus.at(-1)).toMatch(/^<\|im_start\|>system\n[\s\S]*<\|im_end\|>\n$/);

      const made = await ensureModel(cfg.model, 0, () => corpus);
      expect(made.created).toBe(true);
      expect(made.vocab).toBe(350);
      expect(readdirSync(base)).toEqual(['m']); // no temp folder left
      const tok = await Tokenizer.load(made.dir);
      expect(tok.vocabSize).toBe(350);
      // The ChatML markers are single special tokens and the protocol tags were learned as merges.
      expect(tok.encode('<|im_start|>')).toHaveLength(1);
      expect(tok.encode('<answer>').length).toBeLessThan('<answer>'.length);
      const lm = await CausalLM.load(made.dir);
      // 350 x 32 embedding (tied) + 1 layer (q 32x32, k/v 32x16 each, o 32x32, MLP 3 x 32x64, 2 norms x 32) + final
      // norm 32.
      expect(lm.numParameters()).toBe(350 * 32 + (32 * 32 + 2 * 32 * 16 + 32 * 32 + 3 * 32 * 64 + 2 * 32) + 32);

      const again = await ensureModel(cfg.model, 0, () => {
        throw new Error('the corpus is not needed when the model exists');
      });
      expect(again.created).toBe(false);

      // saveModelAtomic: a complete folder (weights + tokenizer files) that loads to the same weights.
      const out = await saveModelAtomic(lm, join(base, 'saved'), made.dir);
      for (const f of [
        'config.json',
        'model.safetensors',
        'tokenizer.json',
        'tokenizer_config.json',
        'generation_config.json',
      ])
        expect(existsSync(join(out, f)), f).toBe(true);
      await saveModelAtomic(lm, out, made.dir); // overwrite in place
      expect(readdirSync(base).sort()).toEqual(['m', 'saved']);
      const back = await CausalLM.load(out);
      const diff = tf.tidy(
        () =>
          tf
            .max(tf.abs(tf.sub(back.trainableVariables()[0] as tf.Variable, lm.trainableVariables()[0] as tf.Variable)))
            .dataSync()[0],
      );
      expect(diff).toBe(0);
      back.dispose();
      lm.dispose();
    },
    60_000,
  );

  it('a missing model folder without model.init.enabled is a one-line error', async () => {
    const cfg = configSchema.parse({ model: { path: '/nonexistent/sharp-model' } });
    await expect(ensureModel(cfg.model, 0, () => [])).rejects.toThrow(
      "model.path '/nonexistent/sharp-model' has no config.json (set model.init.enabled to create a random-init " +
        'model there)',
    );
  });
});
