import * as tf from '@tensorflow/tfjs';

/**
 * DPO loss on preference pairs (Rafailov et al. 2023, arXiv:2305.18290 eq. 7):
 *   L = -log sigmoid(beta * ((logp(y+) - logp_ref(y+)) - (logp(y-) - logp_ref(y-))))
 * averaged over pairs. Inputs are SEQUENCE log-probs (sum over the response tokens, see
 * sequenceLogp); the credit module's failure pairs share a prefix, so only the differing message is
 * scored. Stats (detached scalars, no host sync): implicit rewards beta * (logp - logp_ref) of the
 * chosen and rejected answers, their margin, and accuracy = fraction of pairs whose chosen reward is
 * higher (TRL's rewards/accuracies).
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
  pairs: tf.Scalar;
  rewardChosen: tf.Scalar;
  rewardRejected: tf.Scalar;
  rewardMargin: tf.Scalar;
  accuracy: tf.Scalar;
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
    if (t.rank !== 1 || t.shape[0] !== n) throw new Error(`dpoLoss: ${name} has shape [${t.shape.join(', ')}], expected [${n}]`);
  }
  if (!(opts.beta > 0)) throw new Error(`dpoLoss: beta must be > 0, got ${opts.beta}`);
  if (opts.normalizer !== undefined && !(opts.normalizer > 0)) throw new Error(`dpoLoss: normalizer must be > 0, got ${opts.normalizer}`);
  return tf.tidy(() => {
    const rChosen = tf.mul(tf.sub(inp.chosen, inp.refChosen), opts.beta); // [N]
    const rRejected = tf.mul(tf.sub(inp.rejected, inp.refRejected), opts.beta); // [N]
    const margin = tf.sub(rChosen, rRejected); // [N]
    // -log sigmoid(z) = softplus(-z). Not tf.logSigmoid: its custom gradient reads its input without
    // save(), so the input is already disposed by this tidy when the tape runs (tfjs 4.22).
    const loss = tf.div(tf.sum(tf.softplus(tf.neg(margin))), opts.normalizer ?? Math.max(1, n)) as tf.Scalar; // []
    const mean = (x: tf.Tensor): tf.Scalar => tf.div(tf.sum(x), Math.max(1, n));
    const stats: DpoStatTensors = {
      pairs: tf.scalar(n),
      rewardChosen: mean(rChosen),
      rewardRejected: mean(rRejected),
      rewardMargin: mean(margin),
      accuracy: mean(tf.cast(tf.greater(margin, 0), 'float32')),
    };
    return { loss, stats };
  });
}
