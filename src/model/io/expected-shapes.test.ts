import { describe, it, expect } from 'vitest';
import { checkWeightShapes, expectedWeightShapes } from './expected-shapes.ts';
import { parseHfConfig } from './hf-config.ts';

const base = {
  vocab_size: 100,
  hidden_size: 16,
  intermediate_size: 40,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
};

function shapesOf(m: Map<string, number[]>): Map<string, { shape: number[] }> {
  return new Map([...m].map(([k, shape]) => [k, { shape }]));
}

function errorOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a throw');
}

describe('expectedWeightShapes', () => {
  it('lists llama tensors with [out, in] linear shapes', () => {
    const m = expectedWeightShapes(parseHfConfig({ ...base, model_type: 'llama' }));
    // 1 embedding + 2 layers x 9 + final norm + untied lm_head = 21
    expect(m.size).toBe(21);
    expect(m.get('model.layers.1.self_attn.q_proj.weight')).toEqual([16, 16]); // 4 heads x head_dim 4
    expect(m.get('model.layers.1.self_attn.k_proj.weight')).toEqual([8, 16]); // 2 kv heads x 4
    expect(m.get('model.layers.0.self_attn.o_proj.weight')).toEqual([16, 16]);
    expect(m.get('model.layers.0.mlp.down_proj.weight')).toEqual([16, 40]);
    expect(m.get('lm_head.weight')).toEqual([100, 16]);
  });

  it('adds q/k/v bias for qwen2 and q/k norms for qwen3 (explicit head_dim)', () => {
    const q2 = expectedWeightShapes(parseHfConfig({ ...base, model_type: 'qwen2', tie_word_embeddings: true }));
    expect(q2.get('model.layers.0.self_attn.k_proj.bias')).toEqual([8]);
    expect(q2.has('model.layers.0.self_attn.o_proj.bias')).toBe(false);
    expect(q2.has('lm_head.weight')).toBe(false);
    expect(q2.size).toBe(1 + 2 * 12 + 1);
    const q3 = expectedWeightShapes(parseHfConfig({ ...base, model_type: 'qwen3', head_dim: 8 }));
    expect(q3.get('model.layers.1.self_attn.q_norm.weight')).toEqual([8]);
    expect(q3.get('model.layers.1.self_attn.q_proj.weight')).toEqual([32, 16]); // 4 x 8 > hidden: allowed in Qwen3
    expect(q3.get('model.layers.1.self_attn.o_proj.weight')).toEqual([16, 32]);
  });
});

describe('checkWeightShapes', () => {
  const cfg = parseHfConfig({ ...base, model_type: 'llama', tie_word_embeddings: true });
  it('accepts a matching set and ignores rotary buffers and a tied lm_head', () => {
    const w = shapesOf(expectedWeightShapes(cfg));
    w.set('lm_head.weight', { shape: [100, 16] });
    w.set('model.layers.0.self_attn.rotary_emb.inv_freq', { shape: [2] });
    expect(checkWeightShapes(w, cfg, 'ckpt').sort()).toEqual([
      'lm_head.weight',
      'model.layers.0.self_attn.rotary_emb.inv_freq',
    ]);
  });

  it('names a missing, misshapen or unexpected tensor in one line', () => {
    const w = shapesOf(expectedWeightShapes(cfg));
    w.delete('model.layers.1.mlp.up_proj.weight');
    expect(errorOf(() => checkWeightShapes(w, cfg, 'ckpt'))).toBe(
      "ckpt: tensor 'model.layers.1.mlp.up_proj.weight' is missing (config.json implies shape [40, 16])",
    );
    w.set('model.layers.1.mlp.up_proj.weight', { shape: [16, 40] });
    expect(errorOf(() => checkWeightShapes(w, cfg, 'ckpt'))).toBe(
      "ckpt: tensor 'model.layers.1.mlp.up_proj.weight' has shape [16, 40] but config.json implies [40, 16]",
    );
    w.set('model.layers.1.mlp.up_proj.weight', { shape: [40, 16] });
    w.set('model.layers.2.mlp.up_proj.weight', { shape: [40, 16] });
    expect(errorOf(() => checkWeightShapes(w, cfg, 'ckpt'))).toBe(
      "ckpt: unexpected tensor 'model.layers.2.mlp.up_proj.weight' for a llama config with 2 layers",
    );
  });
});
