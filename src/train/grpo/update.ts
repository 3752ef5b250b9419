/**
 * One GRPO update on a batch of training sequences (batches/sequences.ts RlSequence):
 * pi_old (and pi_ref when beta > 0) log-probs once (pi_old needs no pass of its own with one epoch:
 * it is the forward's values cut off from the gradient), then mu epochs of: micro-batched forward +
 * backward with gradient accumulation, global-norm clipping, one AdamW step at the step's lr.
 * The tensors follow tokenLogprobs' convention, position t of [B, T-1] scoring ids[t + 1], so masks
 * and logprobs are shifted by one. Returns the step's metrics under their metrics.jsonl names: the
 * losses' own (losses/*, dpo/* when mixed) and the update's (losses/total, losses/policy, grad/norm,
 * batch/*).
 */
import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from '../../model/causal-lm.ts';
import { tokenStats } from '../../model/logprobs.ts';
import type { GradientAccumulator } from '../optim/accumulate.ts';
import type { AdamW } from '../optim/adamw.ts';
import { clipAndStep } from '../optim/clip.ts';
import { disposeBatch, microBatchOrder, padBatch, trainedTokens, type PaddedBatch } from '../batches/batch.ts';
import { accumulateDpo, dpoMetrics, preparePairs } from '../losses/dpo-loss.ts';
import { fullBatchNormalizer, grpoLoss, grpoMetrics, stopGradient, type Aggregation } from '../losses/grpo-loss.ts';
import type { PairSequences, RlSequence } from '../batches/sequences.ts';

export interface GrpoUpdateConfig {
  clipLow: number;
  clipHigh: number;
  klBeta: number;
  aggregation: Aggregation;
  microBatch: number;
  epochs: number;
  gradClip: number;
  /** Dr. GRPO length for seq-mean-token-sum-norm; 0 = longest completion of this batch. */
  sumNormLength: number;
  oldLogp: 'recompute' | 'sampling';
  logEntropy: boolean;
}

export interface UpdateContext {
  model: CausalLM;
  optimizer: AdamW;
  /** Gradient buffers for model.trainableVariables() (the LoRA adapters alone when attached), reused across steps. */
  accumulator: GradientAccumulator;
  /**
   * Frozen reference model; required when klBeta > 0 unless the model holds LoRA adapters (then: the base, adapters
   * disabled).
   */
  ref?: CausalLM;
  /** Learning rate of this step (the loop's learningRateAt). */
  lr: number;
  /** Id used to pad ids on the right (never attended to). */
  padId?: number;
  /** DPO pairs mixed into this update with a weight (train.dpoWeight, train.dpoBeta). */
  dpo?: { pairs: readonly PairSequences[]; weight: number; beta: number };
}

/** The metrics of an update (of its last epoch), keyed by their metrics.jsonl names. */
export type UpdateMetrics = Record<string, number>;

interface MicroBatch {
  batch: PaddedBatch;
  adv: tf.Tensor1D | tf.Tensor2D; // [b], or [b, L-1] with per-token advantages
  /** pi_old log-probs; absent when the update has one epoch and recomputes them (the forward's own values then). */
  old?: tf.Tensor2D; // [b, L-1]
  ref?: tf.Tensor2D; // [b, L-1]
}

export function grpoUpdate(ctx: UpdateContext, seqs: readonly RlSequence[], cfg: GrpoUpdateConfig): UpdateMetrics {
  if (seqs.length === 0) throw new Error('grpoUpdate: no sequences (every group was skipped?)');
  const ref = ctx.ref ?? (cfg.klBeta > 0 && ctx.model.lora ? ctx.model.baseView() : undefined);
  if (cfg.klBeta > 0 && !ref) throw new Error('grpoUpdate: klBeta > 0 needs a reference model');
  const vocab = ctx.model.config.vocabSize;
  seqs.forEach((s, i) => checkSequence(s, i, vocab, cfg.oldLogp === 'sampling'));

  const trained = seqs.map(trainedTokens);
  const normalizer = fullBatchNormalizer(cfg.aggregation, trained);
  const maxLen = cfg.sumNormLength > 0 ? cfg.sumNormLength : Math.max(1, ...trained);
  const padId = ctx.padId ?? 0;
  // One epoch: the policy being differentiated is the one that sampled, so pi_old = its own forward.
  const oldIsCurrent = cfg.oldLogp === 'recompute' && cfg.epochs === 1;
  const mbs: MicroBatch[] = [];
  try {
    for (const idx of microBatchOrder(
      seqs.map((s) => s.ids.length),
      cfg.microBatch,
    )) {
      const part = idx.map((i) => seqs[i] as RlSequence);
      const batch = padBatch(part, padId, cfg.oldLogp === 'sampling');
      const mb: MicroBatch = {
        batch,
        adv: advantageTensor(part),
        old: batch.sampleLogp ?? (oldIsCurrent ? undefined : logprobsNoGrad(ctx.model, batch)),
      };
      mbs.push(mb);
      if (cfg.klBeta > 0 && ref) mb.ref = logprobsNoGrad(ref, batch);
    }
    // DPO reference log-probs: the frozen reference, else the policy before this update.
    const dpo =
      ctx.dpo && ctx.dpo.pairs.length > 0 && ctx.dpo.weight > 0
        ? preparePairs(ref ?? ctx.model, ctx.dpo.pairs, cfg.microBatch, padId)
        : undefined;

    let last: UpdateMetrics | undefined;
    for (let epoch = 0; epoch < cfg.epochs; epoch++) {
      ctx.accumulator.reset();
      for (const mb of mbs) {
        ctx.accumulator.add(() => {
          // [b, L-1], the head at trained positions only
          const ts = tokenStats(ctx.model, mb.batch.ids, mb.batch.attn, cfg.logEntropy, mb.batch.mask);
          return grpoLoss(
            {
              logp: ts.logprobs,
              oldLogp: mb.old ?? stopGradient(ts.logprobs),
              adv: mb.adv,
              mask: mb.batch.mask,
              refLogp: mb.ref,
              entropy: ts.entropy,
            },
            {
              clipLow: cfg.clipLow,
              clipHigh: cfg.clipHigh,
              beta: cfg.klBeta,
              aggregation: cfg.aggregation,
              normalizer,
              maxLen,
            },
          );
        }, 'grpo');
      }
      if (dpo && ctx.dpo)
        accumulateDpo(
          ctx.accumulator,
          ctx.model,
          dpo,
          { beta: ctx.dpo.beta, weight: ctx.dpo.weight, microBatch: cfg.microBatch },
          padId,
        );
      const step = ctx.accumulator.finish();
      const gradNorm = clipAndStep(ctx.accumulator, ctx.optimizer, ctx.lr, cfg.gradClip);
      const policyLoss = step.losses.filter((_, i) => step.tags[i] === 'grpo').reduce((a, x) => a + x, 0);
      last = {
        ...grpoMetrics(step.stats.filter((_, i) => step.tags[i] === 'grpo')),
        ...(dpo ? { ...dpoMetrics(step.stats, step.tags), 'dpo/loss': step.loss - policyLoss } : {}),
        'losses/total': step.loss, // GRPO plus weighted DPO when mixed
        'losses/policy': policyLoss,
        'grad/norm': gradNorm, // pre-clip global norm
        'batch/tokens': trained.reduce((a, n) => a + n, 0),
        'batch/sequences': seqs.length,
        'batch/micro_batches': mbs.length,
      };
    }
    return last as UpdateMetrics;
  } finally {
    for (const mb of mbs) {
      // With oldLogp = 'sampling', mb.old is the batch's own sampleLogp tensor: disposed once, by disposeBatch.
      if (mb.old && mb.old !== mb.batch.sampleLogp) mb.old.dispose();
      tf.dispose([mb.adv, ...(mb.ref ? [mb.ref] : [])]);
      disposeBatch(mb.batch);
    }
  }
}

/**
 * The advantages of a micro-batch in tokenLogprobs' convention: [b] when every sequence has one
 * advantage, else [b, L-1] with position t holding the advantage of ids[t + 1] (a sequence without
 * tokenAdv fills its row with `adv`; untrained positions are masked anyway).
 */
export function advantageTensor(part: readonly RlSequence[]): tf.Tensor1D | tf.Tensor2D {
  if (part.every((s) => s.tokenAdv === undefined)) return tf.tensor1d(part.map((s) => s.adv)); // [b]
  const L = Math.max(...part.map((s) => s.ids.length));
  const out = new Float32Array(part.length * (L - 1));
  part.forEach((s, r) => {
    for (let j = 1; j < s.ids.length; j++) out[r * (L - 1) + j - 1] = s.tokenAdv?.[j] ?? s.adv;
  });
  return tf.tensor2d(out, [part.length, L - 1]); // [b, L-1]
}

function checkSequence(s: RlSequence, i: number, vocab: number, needSample: boolean): void {
  if (s.ids.length < 2) throw new Error(`grpoUpdate: sequence ${i} has ${s.ids.length} tokens; at least 2 are needed`);
  if (s.trainMask.length !== s.ids.length)
    throw new Error(`grpoUpdate: sequence ${i} trainMask has ${s.trainMask.length} entries for ${s.ids.length} ids`);
  if (s.trainMask[0] !== 0)
    throw new Error(`grpoUpdate: sequence ${i} trainMask[0] must be 0 (the first token has no prediction)`);
  if (!Number.isFinite(s.adv)) throw new Error(`grpoUpdate: sequence ${i} advantage is ${s.adv}`);
  if (s.tokenAdv !== undefined) {
    if (s.tokenAdv.length !== s.ids.length)
      throw new Error(`grpoUpdate: sequence ${i} tokenAdv has ${s.tokenAdv.length} entries for ${s.ids.length} ids`);
    const j = s.tokenAdv.findIndex((a) => !Number.isFinite(a));
    if (j >= 0) throw new Error(`grpoUpdate: sequence ${i} token ${j} advantage is ${s.tokenAdv[j]}`);
  }
  const bad = s.ids.find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
  if (bad !== undefined) throw new Error(`grpoUpdate: sequence ${i} has token id ${bad} outside [0, ${vocab})`);
  if (needSample && s.sampleLogp?.length !== s.ids.length)
    throw new Error(`grpoUpdate: sequence ${i} needs sampleLogp of length ${s.ids.length} (oldLogp = 'sampling')`);
}

/** Log-probs without a gradient tape (pi_old, pi_ref). */
function logprobsNoGrad(model: CausalLM, b: PaddedBatch): tf.Tensor2D {
  return tokenStats(model, b.ids, b.attn, false, b.mask).logprobs; // [b, L-1], the head at trained positions only
}
