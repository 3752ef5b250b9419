/**
 * Strictness about config.json (a key we skipped could change the maths and give logits that differ
 * from Transformers without a word): every top-level key is either read by the model, in a list of
 * keys that cannot change the forward pass, or refused with the reason. Returns the first problem as
 * {key, message}; undefined when the config is fully understood.
 */
export interface KeyProblem {
  key: string;
  message: string;
}

type Dict = Record<string, unknown>;

/** Keys the decoder reads (validated by the schema or the RoPE reader). */
const USED = new Set([
  'model_type',
  'vocab_size',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'head_dim',
  'hidden_act',
  'rms_norm_eps',
  'tie_word_embeddings',
  'attention_bias',
  'mlp_bias',
  'rope_theta',
  'rope_scaling',
  'rope_parameters',
  'partial_rotary_factor',
  'layer_types',
  'use_sliding_window',
  'sliding_window',
  'max_window_layers',
  'use_mrope',
]);

/**
 * Keys that do not change the forward pass: bookkeeping, token ids (used by generation, not by the
 * maths), the init scale, dropout (0 in released checkpoints, and never applied here), the nominal
 * context (RoPE has no table limit), and Transformers' output switches. pretraining_tp splits the
 * projections into slices in old Llama code, which computes the same product.
 */
const HARMLESS = new Set([
  'architectures',
  'torch_dtype',
  'dtype',
  'transformers_version',
  '_name_or_path',
  'use_cache',
  'bos_token_id',
  'eos_token_id',
  'pad_token_id',
  'initializer_range',
  'max_position_embeddings',
  'attention_dropout',
  'pretraining_tp',
  'tokenizer_class',
  'output_attentions',
  'output_hidden_states',
  'return_dict',
  'torchscript',
  'id2label',
  'label2id',
  'problem_type',
  'chunk_size_feed_forward',
  'is_encoder_decoder',
  '_attn_implementation_autoset',
  'keys_to_ignore_at_inference',
]);

const REASONS: Record<string, string> = {
  quantization_config: 'quantized checkpoints are not supported (load the full-precision weights)',
  auto_map: 'the checkpoint needs custom modeling code (auto_map), which is not supported',
  rope_interleave: 'interleaved RoPE is not supported (only the rotate_half layout)',
};

export function configKeyProblem(cfg: Dict): KeyProblem | undefined {
  const family = cfg.model_type;
  for (const key of Object.keys(cfg)) {
    if (USED.has(key) || HARMLESS.has(key)) continue;
    return {
      key,
      message:
        REASONS[key] ??
        `unknown config.json key: it may change the model's maths, so it is refused (a typo, or a feature this ` +
          `decoder does not implement)`,
    };
  }
  const v = (k: string): unknown => cfg[k];
  if (v('hidden_act') !== undefined && v('hidden_act') !== 'silu')
    return { key: 'hidden_act', message: `'${String(v('hidden_act'))}' is not supported (only silu)` };
  if (v('mlp_bias') === true && family !== 'llama')
    return { key: 'mlp_bias', message: `true is not supported for ${String(family)} (its MLP has no bias)` };
  if (v('use_mrope') !== undefined && v('use_mrope') !== false)
    return { key: 'use_mrope', message: 'multimodal RoPE is not supported (must be false)' };
  const sliding = v('use_sliding_window');
  if (sliding !== undefined && sliding !== false) {
    return {
      key: 'use_sliding_window',
      message:
        `${JSON.stringify(sliding)}: sliding-window attention is not supported (every layer attends to the whole ` +
        `context)`,
    };
  }
  // Qwen2/Qwen3 read the window only with use_sliding_window (default false); Llama has no such switch,
  // so a window there would mean a model this decoder does not compute.
  if (family === 'llama' && v('sliding_window') != null)
    return {
      key: 'sliding_window',
      message: `${JSON.stringify(v('sliding_window'))}: sliding-window attention is not supported (must be null)`,
    };
  const lt = v('layer_types');
  if (lt !== undefined && lt !== null) {
    if (!Array.isArray(lt)) return { key: 'layer_types', message: 'must be a list of attention types' };
    if (lt.length !== v('num_hidden_layers'))
      return { key: 'layer_types', message: `has ${lt.length} entries for ${String(v('num_hidden_layers'))} layers` };
    const other = lt.findIndex((t) => t !== 'full_attention');
    if (other >= 0)
      return {
        key: 'layer_types',
        message: `layer ${other} is '${String(lt[other])}': only full_attention is supported`,
      };
  }
  return undefined;
}
