import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Rng } from '../../random/rng.ts';
import { readCheckpoint, writeCheckpoint } from '../../../test/hf-checkpoint.ts';
import { expectedWeightShapes } from './expected-shapes.ts';
import { parseHfConfig, readGenerationConfig, type HfModelConfigInput } from './hf-config.ts';
import type { WriteTensor } from './safetensors.ts';

const REAL = resolve(import.meta.dirname, '../../../../shared/models/tinystories-260k');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-ckpt-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const qwen3: HfModelConfigInput = {
  model_type: 'qwen3',
  vocab_size: 50,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  tie_word_embeddings: false,
  bos_token_id: 0,
  eos_token_id: 2,
};

function randomWeights(cfg: HfModelConfigInput, seed: number): Map<string, WriteTensor> {
  const rng = new Rng(seed);
  const out = new Map<string, WriteTensor>();
  for (const [name, shape] of expectedWeightShapes(parseHfConfig(cfg))) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = (rng.float() - 0.5) * 0.2;
    out.set(name, { shape, data });
  }
  return out;
}

describe('writeCheckpoint / readCheckpoint', () => {
  it('round-trips a Qwen3-style model (q/k norm, GQA, untied head) exactly', async () => {
    const d = join(dir, 'q3');
    const weights = randomWeights(qwen3, 1);
    await writeCheckpoint(d, { config: qwen3, weights, generation: { bos: 0, eos: [2, 3] } });
    expect((await readdir(d)).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors']);
    const ck = await readCheckpoint(d);
    expect(ck.config.model_type).toBe('qwen3');
    expect(ck.weights.size).toBe(weights.size); // 1 + 2 x 11 + 1 + lm_head = 25
    expect(ck.weights.size).toBe(25);
    for (const [name, t] of weights) expect(ck.weights.get(name)?.data).toEqual(t.data);
    expect(await readGenerationConfig(d)).toEqual({ bos: 0, eos: [2, 3], pad: undefined });
  });

  it('round-trips a Qwen2-style model (qkv bias, tied) through BF16 shards', async () => {
    const cfg: HfModelConfigInput = { ...qwen3, model_type: 'qwen2', head_dim: undefined, tie_word_embeddings: true };
    const d = join(dir, 'q2');
    const weights = randomWeights(cfg, 2);
    expect(weights.has('model.layers.1.self_attn.v_proj.bias')).toBe(true);
    await writeCheckpoint(d, { config: cfg, weights, dtype: 'BF16', maxShardBytes: 1024 });
    expect((await readdir(d)).filter((f) => f.startsWith('model-')).length).toBeGreaterThan(1);
    const ck = await readCheckpoint(d);
    for (const [name, t] of weights) {
      const got = ck.weights.get(name)?.data as Float32Array;
      // bf16 keeps 8 significant bits (7 stored + implicit): round-to-nearest errs by <= half an ulp = 2^-8 relative.
      for (let i = 0; i < t.data.length; i++)
        expect(Math.abs(got[i] - t.data[i])).toBeLessThanOrEqual(Math.abs(t.data[i]) * 2 ** -8);
    }
  });

  it('refuses to write weights that do not fit the config, leaving nothing behind', async () => {
    const d = join(dir, 'bad');
    const weights = randomWeights(qwen3, 3);
    weights.set('model.layers.0.self_attn.q_norm.weight', { shape: [4], data: new Float32Array(4) });
    await expect(writeCheckpoint(d, { config: qwen3, weights })).rejects.toThrow(
      /tensor 'model\.layers\.0\.self_attn\.q_norm\.weight' has shape \[4\] but config\.json implies \[8\]/,
    );
    expect(await readdir(d)).toEqual([]);
  });

  it.skipIf(!existsSync(join(REAL, 'model.safetensors')))('reads the real tinystories-260k folder', async () => {
    const ck = await readCheckpoint(REAL);
    expect(ck.weights.size).toBe(47);
    expect(ck.config.tie_word_embeddings).toBe(true);
  });
});
