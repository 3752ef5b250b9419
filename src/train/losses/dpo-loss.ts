import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from '../../model/causal-lm.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import { disposeBatch, microBatchOrder, padBatch } from '../batches/batch.ts';
import type { PairSequences } from '../batches/sequences.ts';
import type { GradientAccumulator } from '../optim/accumulate.ts';

/**
 * DPO loss on preference pairs (Rafailov et al. 2023, arXiv:2305.18290 eq. 7):
 *   L = -log sigmoid(beta * ((logp(y+) - logp_ref(y+)) - (logp(y-) - logp_ref(y-))))
 * averaged over pairs. Inputs are SEQUENCE log-probs (sum over the response tokens, see
 * sequenceLogp); the credit module's failure pairs share a prefix, so only the differing message is
 * scored. Stats (detached scalars under their metric names, no host sync): implicit rewards
 * beta * (logp - logp_ref) of the chosen and rejected answers (dpo/rewardChosen, dpo/rewardRejected),
 * their margin (dpo/rewardMargin), accuracy = fraction of pairs whose chosen reward is higher
 * (dpo/accuracy, TRL's rewards/accuracies), and dpo/pairs.
 */
export interface DpoInputs {
  /** Policy sequence log-prob of the preferred response. [N] */
  chosen: tf.Tensor1D;
  /** Policy sequence log-prob of the rejected response. [N] */
  rejected: tf.Tensor1D;
  /** Reference sequence log-probs. [N] */
  refChosen: tf.Tensor1D;
  refRejected: tf.Tensor1D;
}

export interface DpoOptions {
  beta: number;
  /** Total pairs of the full batch when micro-batching (default N). */
  normalizer?: number;
}

export interface DpoStatTensors {
  [key: string]: tf.Scalar;
  'dpo/pairs': tf.Scalar;
  'dpo/rewardChosen': tf.Scalar;
  'dpo/rewardRejected': tf.Scalar;
  'dpo/rewardMargin': tf.Scalar;
  'dpo/accuracy': tf.Scalar;
}

/** Sum of token log-probs [B, T] over the mask [B, T]: the log-prob of each sequence's response. */
export function sequenceLogp(logp: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor1D {
  if (logp.shape.join() !== mask.shape.join()) {
    throw new Error(`sequenceLogp: mask has shape [${mask.shape.join(', ')}], expected [${logp.shape.join(', ')}]`);
  }
  return tf.tidy(() => tf.sum(tf.mul(logp, tf.cast(mask, 'float32')), 1)); // [B]
}

export function dpoLoss(inp: DpoInputs, opts: DpoOptions): { loss: tf.Scalar; stats: DpoStatTensors } {
  const n = inp.chosen.shape[0];
  for (const [name, t] of Object.entries(inp) as [string, tf.Tensor][]) {
    if (t.rank !== 1 || t.shape[0] !== n)
      throw new Error(`dpoLoss: ${name} has shape [${t.shape.join(', ')}], expected [${n}]`);
  }
  if (!(opts.beta > 0)) throw new Error(`dpoLoss: beta must be > 0, got ${opts.beta}`);
  if (opts.normalizer !== undefined && !(opts.normalizer > 0))
    throw new Error(`dpoLoss: normalizer must be > 0, got ${opts.normalizer}`);
  return tf.tidy(() => {
    const rChosen = tf.mul(tf.sub(inp.chosen, inp.refChosen), opts.beta); // [N]
    const rRejected = tf.mul(tf.sub(inp.rejected, inp.refRejected), opts.beta); // [N]
    const margin = tf.sub(rChosen, rRejected); // [N]
    // -log sigmoid(z) = softplus(-z). Not tf.logSigmoid: its custom gradient reads its input without
    // save(), so the input is already disposed by this tidy when the tape runs (tfjs 4.22).
    const loss = tf.div(tf.sum(tf.softplus(tf.neg(margin))), opts.normalizer ?? Math.max(1, n)) as tf.Scalar; // []
    const mean = (x: tf.Tensor): tf.Scalar => tf.div(tf.sum(x), Math.max(1, n)); // []
    const stats: DpoStatTensors = {
      'dpo/pairs': tf.scalar(n),
      'dpo/rewardChosen': mean(rChosen),
      'dpo/rewardRejected': mean(rRejected),
      'dpo/rewardMargin': mean(margin),
      'dpo/accuracy': mean(tf.cast(tf.greater(margin, 0), 'float32')),
    };
    return { loss, stats };
  });
}

/**
 * The DPO loss over a model's micro-batches of pairs, added to a gradient accumulator: alone
 * (`sharp dpo`, supervised/dpo.ts) or mixed into a GRPO update with a weight (train.dpoWeight).
 * Each micro-batch stacks its pairs' chosen and rejected sequences into one forward. The reference is a frozen model
 * when one is held; otherwise the policy as it was before this update (its log-probs computed once, without a tape), so
 * mixing DPO into GRPO with beta = 0 needs no second model.
 */
export interface DpoConfig {
  beta: number;
  microBatch: number;
  /** Multiplies the DPO loss (and its gradient) when mixed into another update. */
  weight: number;
}

export interface PreparedPairs {
  pairs: readonly PairSequences[];
  /** Micro-batches of pair indices. */
  order: number[][];
  /** Reference sequence log-probs per pair. */
  refChosen: Float32Array;
  refRejected: Float32Array;
}

function stackPairs(pairs: readonly PairSequences[], idx: readonly number[]) {
  return [
    ...idx.map((i) => (pairs[i] as PairSequences).chosen),
    ...idx.map((i) => (pairs[i] as PairSequences).rejected),
  ];
}

/** Sequence log-probs [2b] (chosen then rejected) of a micro-batch of pairs under `model`. */
function pairLogps(
  model: CausalLM,
  pairs: readonly PairSequences[],
  idx: readonly number[],
  padId: number,
): tf.Tensor1D {
  const batch = padBatch(stackPairs(pairs, idx), padId);
  try {
    return tf.tidy(() => sequenceLogp(tokenLogprobs(model, batch.ids, batch.attn, batch.mask), batch.mask)); // [2b]
  } finally {
    disposeBatch(batch);
  }
}

/** Computes the reference log-probs once per update (no gradient tape). */
export function preparePairs(
  refModel: CausalLM,
  pairs: readonly PairSequences[],
  microBatch: number,
  padId: number,
): PreparedPairs {
  const order = microBatchOrder(
    pairs.map((p) => Math.max(p.chosen.ids.length, p.rejected.ids.length)),
    microBatch,
  );
  const refChosen = new Float32Array(pairs.length);
  const refRejected = new Float32Array(pairs.length);
  for (const idx of order) {
    const lp = pairLogps(refModel, pairs, idx, padId);
    const v = lp.dataSync(); // one read per micro-batch, not per token
    lp.dispose();
    idx.forEach((i, k) => {
      refChosen[i] = v[k] as number;
      refRejected[i] = v[idx.length + k] as number;
    });
  }
  return { pairs, order, refChosen, refRejected };
}

/** Adds the (weighted) DPO gradients of every micro-batch to the accumulator, tagged 'dpo'. */
export function accumulateDpo(
  acc: GradientAccumulator,
  model: CausalLM,
  prep: PreparedPairs,
  cfg: DpoConfig,
  padId: number,
): void {
  const n = prep.pairs.length;
  for (const idx of prep.order) {
    const batch = padBatch(stackPairs(prep.pairs, idx), padId);
    const b = idx.length;
    try {
      acc.add(() => {
        const lp = sequenceLogp(tokenLogprobs(model, batch.ids, batch.attn, batch.mask), batch.mask); // [2b]
        const { loss, stats } = dpoLoss(
          {
            chosen: tf.slice(lp, [0], [b]), // [b]
            rejected: tf.slice(lp, [b], [b]), // [b]
            refChosen: tf.tensor1d(idx.map((i) => prep.refChosen[i] as number)), // [b]
            refRejected: tf.tensor1d(idx.map((i) => prep.refRejected[i] as number)), // [b]
          },
          { beta: cfg.beta, normalizer: n },
        );
        return { loss: tf.mul(loss, cfg.weight) as tf.Scalar, stats }; // []
      }, 'dpo');
    } finally {
      disposeBatch(batch);
    }
  }
}

/** The DPO metrics of one update: pair-weighted means of the per-micro-batch stats (tagged 'dpo'). */
export function dpoMetrics(stats: readonly Record<string, number>[], tags: readonly string[]): Record<string, number> {
  const parts = stats.filter((_, i) => tags[i] === 'dpo');
  const pairs = parts.reduce((a, p) => a + (p['dpo/pairs'] ?? 0), 0);
  const out: Record<string, number> = { 'dpo/pairs': pairs };
  if (pairs === 0) return out;
  for (const k of ['dpo/rewardChosen', 'dpo/rewardRejected', 'dpo/rewardMargin', 'dpo/accuracy']) {
    out[k] = parts.reduce((a, p) => a + (p[k] ?? 0) * (p['dpo/pairs'] ?? 0), 0) / pairs;
  }
  return out;
}
