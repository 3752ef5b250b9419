import * as tf from '@tensorflow/tfjs';

/**
 * SFT loss: masked token cross-entropy mean (`sharp sft`). It takes the
 * target-token log-probs [B, T] that the model's tokenLogprobs returns (the same forward pass and
 * fast custom-gradient cross-entropy the GRPO loss uses) rather than logits, so SFT has no second
 * cross-entropy implementation. Mask: 1 on tokens of messages whose loss mask is on (assistant turns),
 * 0 on system / user / tool-result / template / padding tokens; a transcript message's loss `weight`
 * replaces its 1. The loss is sum(mask * nll) over the number of trained tokens (not the sum of the
 * weights): a weight > 1 adds gradient to its tokens without taking any from the others.
 */
export interface SftOptions {
  /** Trained tokens of the full batch when micro-batching (default: this batch's). */
  normalizer?: number;
}

export interface SftStatTensors {
  [key: string]: tf.Scalar;
  tokens: tf.Scalar;
  /**
   * Weighted negative log-likelihood per trained token of this batch (with unit weights, exp of it is the perplexity).
   */
  nll: tf.Scalar;
}

export function sftLoss(
  logp: tf.Tensor2D,
  mask: tf.Tensor2D,
  opts: SftOptions = {},
): { loss: tf.Scalar; stats: SftStatTensors } {
  if (logp.rank !== 2) throw new Error(`sftLoss: logp must be [B, T], got shape [${logp.shape.join(', ')}]`);
  if (logp.shape.join() !== mask.shape.join()) {
    throw new Error(`sftLoss: mask has shape [${mask.shape.join(', ')}], expected [${logp.shape.join(', ')}]`);
  }
  if (opts.normalizer !== undefined && !(opts.normalizer > 0))
    throw new Error(`sftLoss: normalizer must be > 0, got ${opts.normalizer}`);
  return tf.tidy(() => {
    const m = tf.cast(mask, 'float32'); // [B, T]
    const nllSum = tf.neg(tf.sum(tf.mul(logp, m))); // []
    const tokens = tf.sum(tf.cast(tf.greater(m, 0), 'float32')) as tf.Scalar; // []
    const nll = tf.div(nllSum, tf.maximum(tokens, 1)) as tf.Scalar; // []
    const loss = (opts.normalizer !== undefined ? tf.div(nllSum, opts.normalizer) : nll) as tf.Scalar; // []
    return { loss, stats: { tokens, nll } };
  });
}
