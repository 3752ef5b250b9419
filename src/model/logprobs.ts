import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from './causal-lm.ts';
import { chunkedHeadLogprobs, entropyFromLogits, selectedLogprobs } from './ops/logprobs.ts';
import { gatherRows } from './ops/embedding.ts';

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
 * target ids[:, t+1] is padding are 0. The head runs on the first T-1 positions only, and with
 * `keep` only on the positions it marks.
 */
export function tokenLogprobs(model: CausalLM, ids: tf.Tensor2D, mask: tf.Tensor2D, keep?: tf.Tensor2D): tf.Tensor2D {
  return tokenStats(model, ids, mask, false, keep).logprobs;
}

/**
 * Logprobs and optionally entropy from one forward pass. With model.memory.logprobChunk > 0 the
 * head runs that many rows at a time, forward and backward (chunkedHeadLogprobs), so no
 * [B*(T-1), V] logits tensor is made; the values and gradients are the unchunked ones.
 *
 * keep [B, T-1] (> 0 = wanted, e.g. a batch's train mask): the hidden rows of those positions are
 * gathered before the head, which then runs on them alone; every other entry is 0. A loss masked by
 * `keep` gets the same values and gradients as from all positions (a masked row's gradient through
 * the head is 0 either way), without the [rows, V] products of the rows that carry no loss: with a
 * 150k vocabulary the head is most of a short model's work, and in agent trajectories most tokens
 * are prompts and other agents' messages. TRL's GRPO keeps the last `logits_to_keep` positions;
 * here the kept positions may lie anywhere in the sequence.
 */
export function tokenStats(
  model: CausalLM,
  ids: tf.Tensor2D,
  mask: tf.Tensor2D,
  withEntropy: boolean,
  keep?: tf.Tensor2D,
): TokenStats {
  const [b, t] = ids.shape;
  if (t < 2) throw new Error(`tokenLogprobs: need at least 2 tokens per row, got ids of shape [${b}, ${t}]`);
  if (mask.shape[0] !== b || mask.shape[1] !== t)
    throw new Error(`tokenLogprobs: mask shape [${mask.shape.join(', ')}] differs from ids [${b}, ${t}]`);
  if (keep && (keep.shape[0] !== b || keep.shape[1] !== t - 1))
    throw new Error(`tokenLogprobs: keep shape [${keep.shape.join(', ')}], expected [${b}, ${t - 1}]`);
  const kept = keep ? keptRows(keep.dataSync(), b, t) : undefined;
  return tf.tidy(() => {
    const rows = kept && {
      src: tf.tensor1d(kept.src, 'int32'),
      target: tf.tensor1d(kept.target, 'int32'),
      spread: tf.tensor1d(kept.spread, 'int32'),
    }; // [K], [K], [B*(T-1)]
    const d = model.config.hidden;
    const h = model.hidden(ids, mask); // [B, T, D]
    const n = b * (t - 1);
    // The head's input rows: position j of row r reads h[r, j] and scores ids[r, j + 1].
    const hRows = rows
      ? gatherRows(tf.reshape(h, [b * t, d]), rows.src) // [K, D]
      : (tf.reshape(tf.slice(h, [0, 0, 0], [b, t - 1, d]), [n, d]) as tf.Tensor2D); // [B*(T-1), D]
    const targets = (
      rows ? tf.gather(tf.reshape(ids, [b * t]), rows.target) : tf.reshape(tf.slice(ids, [0, 1], [b, t - 1]), [n])
    ) as tf.Tensor1D; // [K] or [B*(T-1)]
    const targetMask = tf.cast(tf.slice(mask, [0, 1], [b, t - 1]), 'float32'); // [B, T-1]
    // [K] or [K, 2] values of the kept rows -> [B, T-1] (0 elsewhere); identity without keep.
    const spread = (x: tf.Tensor): tf.Tensor2D => {
      if (!rows) return tf.reshape(x, [b, t - 1]) as tf.Tensor2D; // [B, T-1]
      // [K + 1, 1]: the last row is the 0 of unkept positions
      const padded = tf.concat([tf.reshape(x, [x.shape[0] as number, 1]), tf.zeros([1, 1])]) as tf.Tensor2D;
      return tf.reshape(gatherRows(padded, rows.spread), [b, t - 1]) as tf.Tensor2D; // [B*(T-1), 1] -> [B, T-1]
    };
    const k = hRows.shape[0];
    const chunk = model.memory.logprobChunk;
    if (chunk > 0) {
      const out = chunkedHeadLogprobs(
        hRows,
        model.headWeight(),
        tf.cast(targets, 'int32') as tf.Tensor1D,
        chunk,
        withEntropy,
      ); // [K] or [K, 2]
      if (!withEntropy) return { logprobs: tf.mul(spread(out), targetMask) as tf.Tensor2D }; // [B, T-1]
      const lp = tf.mul(spread(tf.slice(out, [0, 0], [k, 1])), targetMask) as tf.Tensor2D; // [B, T-1]
      const ent = tf.mul(spread(tf.slice(out, [0, 1], [k, 1])), targetMask) as tf.Tensor2D; // [B, T-1]
      return { logprobs: lp, entropy: ent };
    }
    const logits = model.logitsFromHidden(hRows); // [K, V]
    // [B, T-1]
    const lp = tf.mul(spread(selectedLogprobs(logits, tf.cast(targets, 'int32'))), targetMask) as tf.Tensor2D;
    if (!withEntropy) return { logprobs: lp };
    const ent = tf.mul(spread(entropyFromLogits(logits)), targetMask) as tf.Tensor2D; // [B, T-1]
    return { logprobs: lp, entropy: ent };
  });
}

/**
 * The rows a keep mask [B, T-1] selects: src, the row of h [B*T, D] each kept position reads;
 * target, the index of its target in ids [B*T]; spread [B*(T-1)], where each position's value lies
 * among the K kept ones (K for an unkept position, which reads the appended 0). With nothing kept,
 * row 0 is computed and spread nowhere, so a loss still depends on the model (its gradient is 0).
 */
export function keptRows(
  keep: ArrayLike<number>,
  b: number,
  t: number,
): { src: Int32Array; target: Int32Array; spread: Int32Array } {
  const src: number[] = [];
  const spread = new Int32Array(b * (t - 1));
  for (let r = 0; r < b; r++) {
    for (let j = 0; j < t - 1; j++) {
      const p = r * (t - 1) + j;
      if ((keep[p] as number) > 0) {
        spread[p] = src.length;
        src.push(r * t + j);
      } else spread[p] = -1;
    }
  }
  const k = src.length;
  for (let p = 0; p < spread.length; p++) if (spread[p] === -1) spread[p] = Math.max(k, 1);
  if (k === 0) src.push(0);
  const s = Int32Array.from(src);
  return { src: s, target: s.map((x) => x + 1), spread }; // [K], [K], [B*(T-1)]
}
