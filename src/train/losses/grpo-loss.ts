import * as tf from '@tensorflow/tfjs';
import { aggregate, type Aggregation } from './aggregate.ts';

/**
 * GRPO clipped surrogate with an optional k3 KL penalty:
 *   rho   = exp(logp - logp_old)
 *   l_t   = -min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A) + beta * KL_k3
 *   KL_k3 = exp(ref - logp) - (ref - logp) - 1          (Schulman's k3, as in arXiv:2402.03300 eq. 4)
 * aggregated over masked tokens by `aggregation` (see aggregate.ts). Asymmetric eps_low / eps_high
 * is DAPO's clip-higher (arXiv:2503.14476 section 3.1).
 *
 * Returns the loss and detached statistics as scalar tensors (no host sync here, so the function
 * can run inside tf.variableGrads; the caller reads all stats of a step at once):
 * - clipFracLow / clipFracHigh: fraction of tokens where the clip is active (A < 0 and rho below
 *   1 - eps_low; A > 0 and rho above 1 + eps_high), i.e. tokens that get no gradient;
 * - approxKl: mean of (rho - 1) - log rho, the k3 estimate of KL(pi_old || pi) (cleanRL ppo.py);
 * - ratioMin / ratioMax over masked tokens; entropy (mean) when given; refKl (mean k3) when beta > 0.
 * Every mean is over this batch's masked tokens, so micro-batch stats merge weighted by `tokens`.
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
  /** Full-batch denominator for micro-batching (aggregate.ts fullBatchNormalizer). */
  normalizer?: number;
  /** Dr. GRPO constant length for seq-mean-token-sum-norm (default T). */
  maxLen?: number;
}

export interface GrpoStatTensors {
  [key: string]: tf.Scalar;
  tokens: tf.Scalar;
  clipFracLow: tf.Scalar;
  clipFracHigh: tf.Scalar;
  approxKl: tf.Scalar;
  ratioMin: tf.Scalar;
  ratioMax: tf.Scalar;
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
  if (!(opts.clipLow > 0 && opts.clipLow < 1)) throw new Error(`grpoLoss: clipLow must be in (0, 1), got ${opts.clipLow}`);
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
      tokens,
      clipFracLow: maskedMean(low),
      clipFracHigh: maskedMean(high),
      approxKl: maskedMean(tf.sub(tf.sub(ratio, 1), logRatio)),
      ratioMin: tf.min(tf.where(on, ratio, tf.fill([B, T], Number.POSITIVE_INFINITY))) as tf.Scalar,
      ratioMax: tf.max(tf.where(on, ratio, tf.fill([B, T], Number.NEGATIVE_INFINITY))) as tf.Scalar,
    };
    if (inp.entropy) stats.entropy = maskedMean(inp.entropy);
    if (klTok) stats.refKl = maskedMean(klTok);
    return { loss, stats };
  });
}

/** GRPO stats of one update as plain numbers (after mergeTokenStats). */
export interface GrpoStats {
  [key: string]: number;
}

/**
 * Merges per-micro-batch stats read back as numbers: min/max keys by min/max, every other mean
 * weighted by `tokens`; `tokens` itself is summed. Micro-batches without tokens are ignored.
 */
export function mergeTokenStats(parts: readonly Record<string, number>[]): GrpoStats {
  const live = parts.filter((p) => (p.tokens ?? 0) > 0);
  const total = live.reduce((s, p) => s + (p.tokens ?? 0), 0);
  const out: GrpoStats = { tokens: total };
  if (live.length === 0) return out;
  const keys = new Set(live.flatMap((p) => Object.keys(p)));
  keys.delete('tokens');
  for (const k of keys) {
    const have = live.filter((p) => p[k] !== undefined);
    if (k.endsWith('Min')) out[k] = Math.min(...have.map((p) => p[k] as number));
    else if (k.endsWith('Max')) out[k] = Math.max(...have.map((p) => p[k] as number));
    else {
      const w = have.reduce((s, p) => s + (p.tokens as number), 0);
      out[k] = have.reduce((s, p) => s + (p[k] as number) * (p.tokens as number), 0) / w;
    }
  }
  return out;
}
