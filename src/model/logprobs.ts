import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from './causal-lm.ts';
import { chunkedHeadLogprobs, entropyFromLogits, selectedLogprobs } from './ops/logprobs.ts';

/**
 * Per-token log-probabilities for training: log p(ids[:, t+1] | ids[:, :t+1]) for
 * t < T-1, through the same decoder the generator runs, with the fast-gradient ops (embedding,
 * matmuls, fused log-softmax gradient). Differentiable in the model's Variables.
 */
export interface TokenStats {
  logprobs: tf.Tensor2D; // [B, T-1]
  entropy?: tf.Tensor2D; // [B, T-1] entropy of the predictive distribution (metric only)
}

/**
 * ids [B, T] int32, mask [B, T] (1 = real token; left or right padding) -> [B, T-1]. Entries whose
 * target ids[:, t+1] is padding are 0. The head runs on the first T-1 positions only.
 */
export function tokenLogprobs(model: CausalLM, ids: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor2D {
  return tokenStats(model, ids, mask, false).logprobs;
}

/**
 * Logprobs and optionally entropy from one forward pass. With model.memory.logprobChunk > 0 the
 * head runs that many rows at a time, forward and backward (chunkedHeadLogprobs), so no
 * [B*(T-1), V] logits tensor is made; the values and gradients are the unchunked ones.
 */
export function tokenStats(model: CausalLM, ids: tf.Tensor2D, mask: tf.Tensor2D, withEntropy: boolean): TokenStats {
  const [b, t] = ids.shape;
  if (t < 2) throw new Error(`tokenLogprobs: need at least 2 tokens per row, got ids of shape [${b}, ${t}]`);
  if (mask.shape[0] !== b || mask.shape[1] !== t) throw new Error(`tokenLogprobs: mask shape [${mask.shape.join(', ')}] differs from ids [${b}, ${t}]`);
  return tf.tidy(() => {
    const d = model.config.hidden;
    const h = model.hidden(ids, mask); // [B, T, D]
    const hPrev = tf.reshape(tf.slice(h, [0, 0, 0], [b, t - 1, d]), [b * (t - 1), d]) as tf.Tensor2D; // [B*(T-1), D]
    const targets = tf.reshape(tf.slice(ids, [0, 1], [b, t - 1]), [b * (t - 1)]) as tf.Tensor1D; // [B*(T-1)]
    const targetMask = tf.cast(tf.slice(mask, [0, 1], [b, t - 1]), 'float32'); // [B, T-1]
    const chunk = model.memory.logprobChunk;
    if (chunk > 0) {
      const out = chunkedHeadLogprobs(hPrev, model.headWeight(), tf.cast(targets, 'int32') as tf.Tensor1D, chunk, withEntropy); // [B*(T-1)] or [B*(T-1), 2]
      const n = b * (t - 1);
      if (!withEntropy) return { logprobs: tf.mul(tf.reshape(out, [b, t - 1]), targetMask) as tf.Tensor2D }; // [B, T-1]
      const lp = tf.mul(tf.reshape(tf.slice(out, [0, 0], [n, 1]), [b, t - 1]), targetMask) as tf.Tensor2D; // [B, T-1]
      const ent = tf.mul(tf.reshape(tf.slice(out, [0, 1], [n, 1]), [b, t - 1]), targetMask) as tf.Tensor2D; // [B, T-1]
      return { logprobs: lp, entropy: ent };
    }
    const logits = model.logitsFromHidden(hPrev); // [B*(T-1), V]
    const lp = tf.mul(tf.reshape(selectedLogprobs(logits, tf.cast(targets, 'int32')), [b, t - 1]), targetMask) as tf.Tensor2D; // [B, T-1]
    if (!withEntropy) return { logprobs: lp };
    const ent = tf.mul(tf.reshape(entropyFromLogits(logits), [b, t - 1]), targetMask) as tf.Tensor2D; // [B, T-1]
    return { logprobs: lp, entropy: ent };
  });
}
