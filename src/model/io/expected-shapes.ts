import { CheckpointError } from './errors.ts';
import type { HfModelConfig } from './hf-config.ts';

/**
 * The tensors a config.json implies, with HF names and shapes (nn.Linear weights are [out, in]),
 * for Llama (LlamaAttention: q/k/v/o bias = attention_bias), Qwen2 (bias on q/k/v only) and Qwen3
 * (q/k/v/o bias = attention_bias, plus per-head q_norm / k_norm of width head_dim). Used to reject a
 * checkpoint that does not fit its config with a one-line error naming the tensor.
 */
export function expectedWeightShapes(cfg: HfModelConfig): Map<string, number[]> {
  const D = cfg.hidden_size;
  const V = cfg.vocab_size;
  const I = cfg.intermediate_size;
  const hd = cfg.head_dim;
  const q = cfg.num_attention_heads * hd;
  const kv = cfg.num_key_value_heads * hd;
  const out = new Map<string, number[]>();
  out.set('model.embed_tokens.weight', [V, D]);
  for (let i = 0; i < cfg.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    out.set(`${p}.input_layernorm.weight`, [D]);
    out.set(`${p}.self_attn.q_proj.weight`, [q, D]);
    out.set(`${p}.self_attn.k_proj.weight`, [kv, D]);
    out.set(`${p}.self_attn.v_proj.weight`, [kv, D]);
    out.set(`${p}.self_attn.o_proj.weight`, [D, q]);
    if (cfg.attention_bias) {
      out.set(`${p}.self_attn.q_proj.bias`, [q]);
      out.set(`${p}.self_attn.k_proj.bias`, [kv]);
      out.set(`${p}.self_attn.v_proj.bias`, [kv]);
      if (cfg.model_type !== 'qwen2') out.set(`${p}.self_attn.o_proj.bias`, [D]);
    }
    if (cfg.model_type === 'qwen3') {
      out.set(`${p}.self_attn.q_norm.weight`, [hd]);
      out.set(`${p}.self_attn.k_norm.weight`, [hd]);
    }
    out.set(`${p}.post_attention_layernorm.weight`, [D]);
    out.set(`${p}.mlp.gate_proj.weight`, [I, D]);
    out.set(`${p}.mlp.up_proj.weight`, [I, D]);
    out.set(`${p}.mlp.down_proj.weight`, [D, I]);
    if (cfg.mlp_bias === true && cfg.model_type === 'llama') {
      out.set(`${p}.mlp.gate_proj.bias`, [I]);
      out.set(`${p}.mlp.up_proj.bias`, [I]);
      out.set(`${p}.mlp.down_proj.bias`, [D]);
    }
  }
  out.set('model.norm.weight', [D]);
  if (!cfg.tie_word_embeddings) out.set('lm_head.weight', [V, D]);
  return out;
}

/** Non-parameter buffers some exporters save (old Llama checkpoints store rotary inv_freq). */
const IGNORED = /\.rotary_emb\.inv_freq$/;

/**
 * Checks loaded weights against the config: every expected tensor present with its exact shape, and
 * nothing unexpected (a tied checkpoint may still carry `lm_head.weight`; rotary buffers are
 * ignored). Throws a one-line CheckpointError naming `source` and the tensor.
 * Returns the names that were present but ignored.
 */
export function checkWeightShapes(
  weights: ReadonlyMap<string, { shape: readonly number[] }>,
  cfg: HfModelConfig,
  source: string,
): string[] {
  const want = expectedWeightShapes(cfg);
  for (const [name, shape] of want) {
    const got = weights.get(name);
    if (!got)
      throw new CheckpointError(
        `${source}: tensor '${name}' is missing (config.json implies shape [${shape.join(', ')}])`,
      );
    if (got.shape.length !== shape.length || got.shape.some((d, i) => d !== shape[i])) {
      throw new CheckpointError(
        `${source}: tensor '${name}' has shape [${got.shape.join(', ')}] but config.json implies [${shape.join(', ')}]`,
      );
    }
  }
  const ignored: string[] = [];
  for (const name of weights.keys()) {
    if (want.has(name)) continue;
    if (IGNORED.test(name) || (name === 'lm_head.weight' && cfg.tie_word_embeddings)) {
      ignored.push(name);
      continue;
    }
    throw new CheckpointError(
      `${source}: unexpected tensor '${name}' for a ${cfg.model_type} config with ${cfg.num_hidden_layers} layers`,
    );
  }
  return ignored;
}
