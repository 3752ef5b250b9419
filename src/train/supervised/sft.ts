import type { CausalLM } from '../../model/causal-lm.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import type { GradientAccumulator } from '../optim/accumulate.ts';
import type { AdamW } from '../optim/adamw.ts';
import { clipAndStep } from '../optim/clip.ts';
import { disposeBatch, microBatchOrder, padBatch, trainedTokens } from '../batches/batch.ts';
import { sftLoss } from '../losses/sft-loss.ts';
import type { SftSequence } from '../batches/sequences.ts';

/**
 * One SFT update (`sharp sft`, and the quickstart's warm start): masked token
 * cross-entropy over the trained turns of a batch of sequences, micro-batched with the loss
 * normalised by the batch's trained tokens (so micro-batching does not change the update), then
 * clip and AdamW.
 */
export interface SftUpdateContext {
  model: CausalLM;
  optimizer: AdamW;
  accumulator: GradientAccumulator;
  lr: number;
  padId: number;
}

export interface SftStats {
  [key: string]: number;
  /** Mean NLL per trained token of the batch. */
  loss: number;
  gradNorm: number;
  tokens: number;
  microBatches: number;
}

export function sftUpdate(
  ctx: SftUpdateContext,
  seqs: readonly SftSequence[],
  cfg: { microBatch: number; gradClip: number },
): SftStats {
  if (seqs.length === 0) throw new Error('sftUpdate: no sequences');
  const tokens = seqs.reduce((a, s) => a + trainedTokens(s), 0);
  if (tokens === 0) throw new Error('sftUpdate: no trained tokens in the batch (every trainMask is 0)');
  ctx.accumulator.reset();
  for (const idx of microBatchOrder(
    seqs.map((s) => s.ids.length),
    cfg.microBatch,
  )) {
    const batch = padBatch(
      idx.map((i) => seqs[i] as SftSequence),
      ctx.padId,
    );
    try {
      ctx.accumulator.add(
        () => sftLoss(tokenLogprobs(ctx.model, batch.ids, batch.attn, batch.mask), batch.mask, { normalizer: tokens }),
        'sft',
      );
    } finally {
      disposeBatch(batch);
    }
  }
  const step = ctx.accumulator.finish();
  const gradNorm = clipAndStep(ctx.accumulator, ctx.optimizer, ctx.lr, cfg.gradClip);
  return { loss: step.loss, gradNorm, tokens, microBatches: step.microBatches };
}
