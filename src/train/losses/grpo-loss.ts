import * as tf from '@tensorflow/tfjs';

/**
 * GRPO clipped surrogate with an optional k3 KL penalty:
 *   rho   = exp(logp - logp_old)
 *   l_t   = -min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A) + beta * KL_k3
 *   KL_k3 = exp(ref - logp) - (ref - logp) - 1          (Schulman's k3, as in arXiv:2402.03300 eq. 4)
 * aggregated over masked tokens by `aggregation` (see aggregate below). Asymmetric eps_low / eps_high
 * is DAPO's clip-higher (arXiv:2503.14476 section 3.1).
 *
 * Returns the loss and detached statistics as scalar tensors under their metric names (no host
 * sync here, so the function can run inside tf.variableGrads; the caller reads all stats of a step
 * at once, and grpoMetrics merges the micro-batches'):
 * - losses/clipfrac_low / _high: fraction of tokens where the clip is active (A < 0 and rho below
 *   1 - eps_low; A > 0 and rho above 1 + eps_high), i.e. tokens that get no gradient;
 * - losses/approx_kl: mean of (rho - 1) - log rho, the k3 estimate of KL(pi_old || pi) (cleanRL ppo.py);
 * - losses/ratio_min / _max over masked tokens; losses/entropy (mean) when given; losses/ref_kl
 *   (mean k3) when beta > 0; batch/tokens, the masked tokens.
 * Every mean is over this batch's masked tokens, so micro-batch stats merge weighted by batch/tokens.
 */
export interface GrpoInputs {
  /** Log-prob of each target token under the policy being trained. [B, T] */
  logp: tf.Tensor2D;
  /** Log-prob under the sampling (old) policy. [B, T] */
  oldLogp: tf.Tensor2D;
  /** Advantage per sequence [B] or per token [B, T]. */
  adv: tf.Tensor1D | tf.Tensor2D;
  /** 1 for trained (generated) tokens, 0 for prompt, template, tool-result and padding. [B, T] */
  mask: tf.Tensor2D;
  /** Log-prob under the frozen reference; required when beta > 0. [B, T] */
  refLogp?: tf.Tensor2D;
  /** Per-token entropy of the policy, for logging only. [B, T] */
  entropy?: tf.Tensor2D;
}

export interface GrpoOptions {
  clipLow: number;
  clipHigh: number;
  /** KL coefficient; 0 = no KL term (refLogp is then ignored). */
  beta: number;
  aggregation: Aggregation;
  /** Full-batch denominator for micro-batching (fullBatchNormalizer below). */
  normalizer?: number;
  /** Dr. GRPO constant length for seq-mean-token-sum-norm (default T). */
  maxLen?: number;
}

interface GrpoStatTensors {
  [key: string]: tf.Scalar;
  'batch/tokens': tf.Scalar;
  'losses/clipfrac_low': tf.Scalar;
  'losses/clipfrac_high': tf.Scalar;
  'losses/approx_kl': tf.Scalar;
  'losses/ratio_min': tf.Scalar;
  'losses/ratio_max': tf.Scalar;
}

export interface GrpoLossResult {
  loss: tf.Scalar;
  stats: GrpoStatTensors;
}

function checkShape(name: string, t: tf.Tensor, want: readonly number[]): void {
  if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i])) {
    throw new Error(`grpoLoss: ${name} has shape [${t.shape.join(', ')}], expected [${want.join(', ')}]`);
  }
}

export function grpoLoss(inp: GrpoInputs, opts: GrpoOptions): GrpoLossResult {
  const [B, T] = inp.logp.shape;
  if (inp.logp.rank !== 2) throw new Error(`grpoLoss: logp must be [B, T], got shape [${inp.logp.shape.join(', ')}]`);
  checkShape('oldLogp', inp.oldLogp, [B, T]);
  checkShape('mask', inp.mask, [B, T]);
  checkShape('adv', inp.adv, inp.adv.rank === 1 ? [B] : [B, T]);
  if (inp.entropy) checkShape('entropy', inp.entropy, [B, T]);
  if (!(opts.clipLow > 0 && opts.clipLow < 1))
    throw new Error(`grpoLoss: clipLow must be in (0, 1), got ${opts.clipLow}`);
  if (!(opts.clipHigh > 0)) throw new Error(`grpoLoss: clipHigh must be > 0, got ${opts.clipHigh}`);
  if (!(opts.beta >= 0)) throw new Error(`grpoLoss: beta must be >= 0, got ${opts.beta}`);
  if (opts.beta > 0) {
    if (!inp.refLogp) throw new Error('grpoLoss: beta > 0 needs refLogp');
    checkShape('refLogp', inp.refLogp, [B, T]);
  }

  return tf.tidy(() => {
    const mask = tf.cast(inp.mask, 'float32') as tf.Tensor2D; // [B, T]
    const adv = (inp.adv.rank === 1 ? tf.expandDims(inp.adv, 1) : inp.adv) as tf.Tensor2D; // [B, 1] or [B, T]
    const logRatio = tf.sub(inp.logp, inp.oldLogp); // [B, T]
    const ratio = tf.exp(logRatio); // [B, T]
    const surr1 = tf.mul(ratio, adv); // [B, T]
    const surr2 = tf.mul(tf.clipByValue(ratio, 1 - opts.clipLow, 1 + opts.clipHigh), adv); // [B, T]
    let perToken = tf.neg(tf.minimum(surr1, surr2)) as tf.Tensor2D; // [B, T]
    let klTok: tf.Tensor2D | undefined;
    if (opts.beta > 0 && inp.refLogp) {
      const d = tf.sub(inp.refLogp, inp.logp); // [B, T]
      klTok = tf.sub(tf.sub(tf.exp(d), d), 1) as tf.Tensor2D; // [B, T]
      perToken = tf.add(perToken, tf.mul(klTok, opts.beta)); // [B, T]
    }
    // []
    const loss = aggregate(opts.aggregation, perToken, mask, { normalizer: opts.normalizer, maxLen: opts.maxLen });

    // Detached statistics: none of them feeds the loss, so no gradient flows through them.
    const tokens = tf.sum(mask) as tf.Scalar; // []
    const denom = tf.maximum(tokens, 1); // []
    const maskedMean = (x: tf.Tensor): tf.Scalar => tf.div(tf.sum(tf.mul(x, mask)), denom); // []
    const f32 = (b: tf.Tensor): tf.Tensor => tf.cast(b, 'float32');
    const low = tf.mul(f32(tf.less(ratio, 1 - opts.clipLow)), f32(tf.less(adv, 0))); // [B, T]
    const high = tf.mul(f32(tf.greater(ratio, 1 + opts.clipHigh)), f32(tf.greater(adv, 0))); // [B, T]
    const on = tf.greater(mask, 0); // [B, T]
    const stats: GrpoStatTensors = {
      'batch/tokens': tokens,
      'losses/clipfrac_low': maskedMean(low),
      'losses/clipfrac_high': maskedMean(high),
      'losses/approx_kl': maskedMean(tf.sub(tf.sub(ratio, 1), logRatio)),
      'losses/ratio_min': tf.min(tf.where(on, ratio, tf.fill([B, T], Number.POSITIVE_INFINITY))) as tf.Scalar, // []
      'losses/ratio_max': tf.max(tf.where(on, ratio, tf.fill([B, T], Number.NEGATIVE_INFINITY))) as tf.Scalar, // []
    };
    if (inp.entropy) stats['losses/entropy'] = maskedMean(inp.entropy);
    if (klTok) stats['losses/ref_kl'] = maskedMean(klTok);
    return { loss, stats };
  });
}

/**
 * The GRPO metrics of one update from its micro-batches' stats read back as numbers:
 * `_min` / `_max` keys by min / max, every other mean weighted by batch/tokens, which is summed;
 * micro-batches without tokens are ignored. losses/clipfrac is the clipped fraction both ways.
 */
export function grpoMetrics(parts: readonly Record<string, number>[]): Record<string, number> {
  const TOKENS = 'batch/tokens';
  const live = parts.filter((p) => (p[TOKENS] ?? 0) > 0);
  const total = live.reduce((s, p) => s + (p[TOKENS] ?? 0), 0);
  const out: Record<string, number> = { [TOKENS]: total };
  if (live.length === 0) return out;
  const keys = new Set(live.flatMap((p) => Object.keys(p)));
  keys.delete(TOKENS);
  for (const k of keys) {
    const have = live.filter((p) => p[k] !== undefined);
    if (k.endsWith('_min')) out[k] = Math.min(...have.map((p) => p[k] as number));
    else if (k.endsWith('_max')) out[k] = Math.max(...have.map((p) => p[k] as number));
    else {
      const w = have.reduce((s, p) => s + (p[TOKENS] as number), 0);
      out[k] = have.reduce((s, p) => s + (p[k] as number) * (p[TOKENS] as number), 0) / w;
    }
  }
  const low = out['losses/clipfrac_low'];
  const high = out['losses/clipfrac_high'];
  if (low !== undefined && high !== undefined) out['losses/clipfrac'] = low + high;
  return out;
}

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

const AGGREGATIONS = Object.keys(aggregators) as Aggregation[];

/** Aggregates a per-token loss [B, T] under a float mask [B, T] (1 = trained token). */
export function aggregate(
  kind: Aggregation,
  perToken: tf.Tensor2D,
  mask: tf.Tensor2D,
  opts: AggregateOptions = {},
): tf.Scalar {
  const fn = aggregators[kind];
  if (!fn) throw new Error(`aggregate: unknown aggregation '${String(kind)}' (one of ${AGGREGATIONS.join(', ')})`);
  if (opts.normalizer !== undefined && !(opts.normalizer > 0))
    throw new Error(`aggregate: normalizer must be > 0, got ${opts.normalizer}`);
  if (opts.maxLen !== undefined && !(opts.maxLen > 0))
    throw new Error(`aggregate: maxLen must be > 0, got ${opts.maxLen}`);
  return tf.tidy(() => fn(perToken, mask, opts));
}

/**
 * The denominator of a full batch given the number of trained tokens of each of its sequences:
 * total tokens for token-mean, number of sequences for the per-sequence modes.
 */
export function fullBatchNormalizer(kind: Aggregation, tokensPerSeq: readonly number[]): number {
  if (kind === 'token-mean')
    return Math.max(
      1,
      tokensPerSeq.reduce((s, n) => s + n, 0),
    );
  return Math.max(1, tokensPerSeq.length);
}

/**
 * The identity whose gradient is zero (PyTorch's `detach`, TensorFlow's `stop_gradient`; tfjs has no
 * such op). A GRPO update of one epoch uses it for pi_old: the policy that sampled the batch is the
 * policy being differentiated, so pi_old's log-probs are the forward's own values without a gradient,
 * and a second forward pass to recompute them would be wasted.
 */
const stopGradientOp = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x] = args as [tf.Tensor];
  return {
    value: tf.clone(x), // same shape as x
    gradFunc: (dy: tf.Tensor) => [tf.zerosLike(dy)],
  };
});

/** x's values, cut off from the gradient tape. */
export function stopGradient<T extends tf.Tensor>(x: T): T {
  return tf.tidy('stopGradient', () => stopGradientOp(x)) as T; // named scope for tf.profile
}
