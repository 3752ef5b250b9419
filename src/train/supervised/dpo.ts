import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from '../../model/causal-lm.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import type { GradientAccumulator } from '../optim/accumulate.ts';
import type { AdamW } from '../optim/adamw.ts';
import { applyAccumulated } from '../optim/apply.ts';
import { disposeBatch, microBatchOrder, padBatch } from '../batches/batch.ts';
import { dpoLoss, sequenceLogp } from '../losses/dpo-loss.ts';
import type { PairSequences } from '../batches/sequences.ts';

/**
 * DPO updates on preference pairs: alone (`sharp dpo`) or mixed into a GRPO
 * update with a weight (train.dpoWeight). Each micro-batch stacks its pairs' chosen and rejected
 * sequences into one forward. The reference is a frozen model when one is held; otherwise the
 * policy as it was before this update (its log-probs computed once, without a tape), so mixing DPO
 * into GRPO with beta = 0 needs no second model.
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
  return [...idx.map((i) => (pairs[i] as PairSequences).chosen), ...idx.map((i) => (pairs[i] as PairSequences).rejected)];
}

/** Sequence log-probs [2b] (chosen then rejected) of a micro-batch of pairs under `model`. */
function pairLogps(model: CausalLM, pairs: readonly PairSequences[], idx: readonly number[], padId: number): tf.Tensor1D {
  const batch = padBatch(stackPairs(pairs, idx), padId);
  try {
    return tf.tidy(() => sequenceLogp(tokenLogprobs(model, batch.ids, batch.attn), batch.mask)); // [2b]
  } finally {
    disposeBatch(batch);
  }
}

/** Computes the reference log-probs once per update (no gradient tape). */
export function preparePairs(refModel: CausalLM, pairs: readonly PairSequences[], microBatch: number, padId: number): PreparedPairs {
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
export function accumulateDpo(acc: GradientAccumulator, model: CausalLM, prep: PreparedPairs, cfg: DpoConfig, padId: number): void {
  const n = prep.pairs.length;
  for (const idx of prep.order) {
    const batch = padBatch(stackPairs(prep.pairs, idx), padId);
    const b = idx.length;
    try {
      acc.add(() => {
        const lp = sequenceLogp(tokenLogprobs(model, batch.ids, batch.attn), batch.mask); // [2b]
        const { loss, stats } = dpoLoss(
          {
            chosen: tf.slice(lp, [0], [b]), // [b]
            rejected: tf.slice(lp, [b], [b]), // [b]
            refChosen: tf.tensor1d(idx.map((i) => prep.refChosen[i] as number)),
            refRejected: tf.tensor1d(idx.map((i) => prep.refRejected[i] as number)),
          },
          { beta: cfg.beta, normalizer: n },
        );
        return { loss: tf.mul(loss, cfg.weight) as tf.Scalar, stats };
      }, 'dpo');
    } finally {
      disposeBatch(batch);
    }
  }
}

/** Pair-weighted mean of the per-micro-batch DPO stats (tagged 'dpo'). */
export function mergeDpoStats(stats: readonly Record<string, number>[], tags: readonly string[]): Record<string, number> {
  const parts = stats.filter((_, i) => tags[i] === 'dpo');
  const pairs = parts.reduce((a, p) => a + (p.pairs ?? 0), 0);
  const out: Record<string, number> = { pairs };
  if (pairs === 0) return out;
  for (const k of ['rewardChosen', 'rewardRejected', 'rewardMargin', 'accuracy']) {
    out[k] = parts.reduce((a, p) => a + (p[k] ?? 0) * (p.pairs ?? 0), 0) / pairs;
  }
  return out;
}

export interface DpoUpdateContext {
  model: CausalLM;
  /** Frozen reference; absent: the policy before this update. */
  ref?: CausalLM;
  optimizer: AdamW;
  accumulator: GradientAccumulator;
  lr: number;
  padId: number;
}

/** One DPO-only update: reference log-probs, accumulate, clip, AdamW. */
export function dpoUpdate(ctx: DpoUpdateContext, pairs: readonly PairSequences[], cfg: DpoConfig & { gradClip: number }): Record<string, number> {
  if (pairs.length === 0) throw new Error('dpoUpdate: no preference pairs');
  const prep = preparePairs(ctx.ref ?? ctx.model, pairs, cfg.microBatch, ctx.padId);
  ctx.accumulator.reset();
  accumulateDpo(ctx.accumulator, ctx.model, prep, cfg, ctx.padId);
  const step = ctx.accumulator.finish();
  const gradNorm = applyAccumulated(ctx.accumulator, ctx.optimizer, ctx.lr, cfg.gradClip);
  return { ...mergeDpoStats(step.stats, step.tags), loss: step.loss, gradNorm, microBatches: step.microBatches };
}
