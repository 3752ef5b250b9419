import { parseHfConfig, type HfModelConfig } from './io/hf-config.ts';
import { ropeConfigOf, type RopeFormat } from './rope/from-config.ts';
import type { RopeSpec } from './rope/spec.ts';

/**
 * The model's own view of a Hugging Face `config.json`: every option the
 * decoder reads, resolved once (defaults of the HF classes applied, family rules folded in), so
 * the layers never look at `model_type` again.
 */
export type ModelFamily = 'llama' | 'qwen2' | 'qwen3';

export const MODEL_FAMILIES: readonly ModelFamily[] = ['llama', 'qwen2', 'qwen3'];

export interface ModelConfig {
  family: ModelFamily;
  vocabSize: number;
  hidden: number; // hidden_size: the residual width D
  layers: number; // num_hidden_layers
  heads: number; // num_attention_heads H
  kvHeads: number; // num_key_value_heads (GQA when < heads; HF repeat_kv: kv head j serves q heads j*rep..j*rep+rep-1)
  headDim: number; // head_dim (Qwen3 sets it apart from hidden/heads)
  intermediate: number; // intermediate_size of the SwiGLU MLP
  rope: RopeSpec; // RoPE variant and its parameters (rope_theta/rope_scaling or rope_parameters)
  rmsEps: number; // rms_norm_eps
  tieEmbeddings: boolean; // tie_word_embeddings: LM head = embed_tokens^T
  qkvBias: boolean; // qwen2 always; llama/qwen3 when attention_bias
  oBias: boolean; // llama/qwen3 attention_bias also biases o_proj (HF LlamaAttention, Qwen3Attention)
  mlpBias: boolean; // llama mlp_bias
  qkNorm: boolean; // qwen3: per-head RMSNorm on q and k before RoPE
  maxPositions: number; // max_position_embeddings (only checked, RoPE has no table limit)
}

function num(hf: Record<string, unknown>, key: string, fallback?: number): number {
  const v = hf[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new Error(`config.json: '${key}' must be a number (got ${JSON.stringify(hf[key])})`);
  return v;
}

function int(hf: Record<string, unknown>, key: string, fallback?: number): number {
  const v = num(hf, key, fallback);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`config.json: '${key}' must be a positive integer (got ${v})`);
  return v;
}

function bool(hf: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const v = hf[key] ?? fallback;
  if (typeof v !== 'boolean') throw new Error(`config.json: '${key}' must be true or false (got ${JSON.stringify(v)})`);
  return v;
}

/** Resolves an HF config into the decoder's options; throws a one-line error naming the bad key. */
export function modelConfigFromHf(cfg: HfModelConfig): ModelConfig {
  const hf = cfg as unknown as Record<string, unknown>;
  const family = hf.model_type;
  if (typeof family !== 'string' || !(MODEL_FAMILIES as readonly string[]).includes(family)) {
    throw new Error(
      `config.json: model_type ${JSON.stringify(family)} is not supported (use ${MODEL_FAMILIES.join(', ')})`,
    );
  }
  const f = family as ModelFamily;
  const hidden = int(hf, 'hidden_size');
  const heads = int(hf, 'num_attention_heads');
  const kvHeads = int(hf, 'num_key_value_heads', heads);
  if (heads % kvHeads !== 0)
    throw new Error(
      `config.json: num_attention_heads (${heads}) must be a multiple of num_key_value_heads (${kvHeads})`,
    );
  if (hf.head_dim === undefined || hf.head_dim === null) {
    if (hidden % heads !== 0)
      throw new Error(
        `config.json: hidden_size (${hidden}) is not divisible by num_attention_heads (${heads}) and head_dim is ` +
          `absent`,
      );
  }
  const headDim = int(hf, 'head_dim', hidden / heads);
  if (headDim % 2 !== 0) throw new Error(`config.json: head_dim (${headDim}) must be even for RoPE`);
  const act = hf.hidden_act ?? 'silu';
  if (act !== 'silu') throw new Error(`config.json: hidden_act '${String(act)}' is not supported (only silu)`);
  const attentionBias = bool(hf, 'attention_bias', false);
  return {
    family: f,
    vocabSize: int(hf, 'vocab_size'),
    hidden,
    layers: int(hf, 'num_hidden_layers'),
    heads,
    kvHeads,
    headDim,
    intermediate: int(hf, 'intermediate_size'),
    rope: ropeConfigOf(hf, int(hf, 'max_position_embeddings', 2048)).spec,
    rmsEps: num(hf, 'rms_norm_eps', 1e-6),
    tieEmbeddings: bool(hf, 'tie_word_embeddings', false), // the HF default for all three families
    qkvBias: f === 'qwen2' ? true : attentionBias,
    oBias: f === 'qwen2' ? false : attentionBias,
    mlpBias: f === 'llama' ? bool(hf, 'mlp_bias', false) : false,
    qkNorm: f === 'qwen3',
    maxPositions: int(hf, 'max_position_embeddings', 2048),
  };
}

/** Options of the random-init builder (`sharp init-model`, tests, the quickstart). */
export interface BuildOptions {
  arch: ModelFamily;
  layers: number;
  hidden: number;
  heads: number;
  kvHeads?: number;
  headDim?: number;
  intermediate: number;
  vocab: number;
  maxPositions?: number;
  tieEmbeddings?: boolean;
  ropeTheta?: number;
  /** How config.json spells RoPE: Transformers 4.x `rope_theta` (default) or 5.x `rope_parameters`. */
  ropeFormat?: RopeFormat;
  rmsEps?: number;
  bosTokenId?: number;
  eosTokenId?: number;
}

/** An HF config.json for a fresh model, with the fields transformers needs to load it too. */
export function hfConfigFor(o: BuildOptions): HfModelConfig {
  const archName = { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' }[o.arch];
  const cfg: Record<string, unknown> = {
    architectures: [archName],
    model_type: o.arch,
    vocab_size: o.vocab,
    hidden_size: o.hidden,
    intermediate_size: o.intermediate,
    num_hidden_layers: o.layers,
    num_attention_heads: o.heads,
    num_key_value_heads: o.kvHeads ?? o.heads,
    head_dim: o.headDim ?? o.hidden / o.heads,
    hidden_act: 'silu',
    max_position_embeddings: o.maxPositions ?? 2048,
    rms_norm_eps: o.rmsEps ?? 1e-6,
    ...(o.ropeFormat === 'rope_parameters'
      ? { rope_parameters: { rope_theta: o.ropeTheta ?? 10000, rope_type: 'default' } }
      : { rope_theta: o.ropeTheta ?? 10000, rope_scaling: null }),
    tie_word_embeddings: o.tieEmbeddings ?? true,
    attention_bias: o.arch === 'qwen2',
    attention_dropout: 0,
    initializer_range: 0.02,
    torch_dtype: 'float32',
    use_cache: true,
  };
  if (o.bosTokenId !== undefined) cfg.bos_token_id = o.bosTokenId;
  if (o.eosTokenId !== undefined) cfg.eos_token_id = o.eosTokenId;
  return parseHfConfig(cfg, 'init-model config');
}
