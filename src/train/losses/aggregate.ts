import * as tf from '@tensorflow/tfjs';

/**
 * Loss aggregation: how a per-token loss [B, T] becomes one scalar. A
 * registry, chosen once by name.
 *
 * - `token-mean`: sum over all masked tokens / number of masked tokens (DAPO, arXiv:2503.14476,
 *   section 3.3: long answers weigh in proportion to their length).
 * - `seq-mean-token-mean`: mean over tokens of each sequence, then mean over sequences (the original
 *   GRPO, arXiv:2402.03300 eq. 3).
 * - `seq-mean-token-sum-norm`: sum over tokens / a constant max length, mean over sequences
 *   (Dr. GRPO, arXiv:2503.20783 section 3.1: removes the length bias of per-sequence normalisation).
 *
 * Micro-batching: the denominator of the FULL batch (all micro-batches of an update) can be passed
 * as `normalizer` (see fullBatchNormalizer), so that the micro-batch losses (and their gradients)
 * sum to exactly the full-batch loss.
 */
export type Aggregation = 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';

export interface AggregateOptions {
  /** Full-batch denominator: masked tokens for token-mean, sequences otherwise. Default: this batch's. */
  normalizer?: number;
  /** Dr. GRPO's constant length (seq-mean-token-sum-norm); default T. */
  maxLen?: number;
}

type Aggregator = (perToken: tf.Tensor2D, mask: tf.Tensor2D, opts: AggregateOptions) => tf.Scalar;

const aggregators: Record<Aggregation, Aggregator> = {
  'token-mean': (perToken, mask, opts) => {
    const total = tf.sum(tf.mul(perToken, mask)); // []
    return opts.normalizer !== undefined ? tf.div(total, opts.normalizer) : tf.div(total, tf.maximum(tf.sum(mask), 1));
  },
  'seq-mean-token-mean': (perToken, mask, opts) => {
    const perSeq = tf.div(tf.sum(tf.mul(perToken, mask), 1), tf.maximum(tf.sum(mask, 1), 1)); // [B]
    return tf.div(tf.sum(perSeq), opts.normalizer ?? perToken.shape[0]);
  },
  'seq-mean-token-sum-norm': (perToken, mask, opts) => {
    const maxLen = opts.maxLen ?? perToken.shape[1];
    const perSeq = tf.div(tf.sum(tf.mul(perToken, mask), 1), maxLen); // [B]
    return tf.div(tf.sum(perSeq), opts.normalizer ?? perToken.shape[0]);
  },
};

export const AGGREGATIONS = Object.keys(aggregators) as Aggregation[];

/** Aggregates a per-token loss [B, T] under a float mask [B, T] (1 = trained token). */
export function aggregate(kind: Aggregation, perToken: tf.Tensor2D, mask: tf.Tensor2D, opts: AggregateOptions = {}): tf.Scalar {
  const fn = aggregators[kind];
  if (!fn) throw new Error(`aggregate: unknown aggregation '${String(kind)}' (one of ${AGGREGATIONS.join(', ')})`);
  if (opts.normalizer !== undefined && !(opts.normalizer > 0)) throw new Error(`aggregate: normalizer must be > 0, got ${opts.normalizer}`);
  if (opts.maxLen !== undefined && !(opts.maxLen > 0)) throw new Error(`aggregate: maxLen must be > 0, got ${opts.maxLen}`);
  return tf.tidy(() => fn(perToken, mask, opts));
}

/**
 * The denominator of a full batch given the number of trained tokens of each of its sequences:
 * total tokens for token-mean, number of sequences for the per-sequence modes.
 */
export function fullBatchNormalizer(kind: Aggregation, tokensPerSeq: readonly number[]): number {
  if (kind === 'token-mean') return Math.max(1, tokensPerSeq.reduce((s, n) => s + n, 0));
  return Math.max(1, tokensPerSeq.length);
}
