/**
 * One internal description of a model's rotary position embedding, whichever way config.json spells
 * it (Transformers 4.x `rope_theta` + `rope_scaling`, or 5.x `rope_parameters`). The variants are
 * the ones Transformers' modeling_rope_utils.py implements for Llama / Qwen2 / Qwen3 checkpoints:
 * plain RoPE (Su et al. 2021), position interpolation (`linear`, Chen et al. 2023), Llama 3.1's
 * wavelength-banded interpolation (`llama3`) and YaRN (Peng et al. 2023, arXiv:2309.00071).
 */
export type RopeSpec =
  | { type: 'default'; theta: number }
  | { type: 'linear'; theta: number; factor: number }
  | {
      type: 'llama3';
      theta: number;
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositions: number;
    }
  | {
      type: 'yarn';
      theta: number;
      factor: number;
      originalMaxPositions: number;
      betaFast: number;
      betaSlow: number;
      /**
       * Scale of cos/sin (so of q and k): `attention_factor`, else from mscale / mscale_all_dim, else 0.1 ln(factor) +
       * 1.
       */
      attentionFactor: number;
      /** Round the correction range to whole dimensions (Transformers' default; gpt-oss turns it off). */
      truncate: boolean;
    };

export const DEFAULT_ROPE_THETA = 10000; // LlamaConfig / Qwen2Config / Qwen3Config default
