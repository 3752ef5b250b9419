import * as tf from '@tensorflow/tfjs';
import type { SftSequence } from './sequences.ts';

/**
 * Right-padded tensors of a micro-batch of sequences, in tokenLogprobs' convention: position t of
 * the [b, L-1] tensors scores ids[t + 1], so the train mask and sampling logprobs shift by one.
 * Host arrays are filled once and uploaded once per tensor (no per-token transfers).
 */
export interface PaddedBatch {
  ids: tf.Tensor2D; // [b, L] int32
  attn: tf.Tensor2D; // [b, L] int32, 1 = real token
  mask: tf.Tensor2D; // [b, L-1] float32, > 0 = trained target (its loss weight, 1 unless an SFT message sets one)
  /** Sampling logprobs of the targets, when requested. */
  sampleLogp?: tf.Tensor2D; // [b, L-1]
}

export interface BatchSequence extends SftSequence {
  sampleLogp?: number[];
}

export function padBatch(seqs: readonly BatchSequence[], padId: number, withSampleLogp = false): PaddedBatch {
  if (seqs.length === 0) throw new Error('padBatch: empty micro-batch');
  const b = seqs.length;
  const L = Math.max(...seqs.map((s) => s.ids.length));
  if (L < 2) throw new Error('padBatch: sequences need at least 2 tokens');
  const ids = new Int32Array(b * L).fill(padId);
  const attn = new Int32Array(b * L);
  const mask = new Float32Array(b * (L - 1));
  const old = withSampleLogp ? new Float32Array(b * (L - 1)) : undefined;
  seqs.forEach((s, r) => {
    s.ids.forEach((t, j) => {
      ids[r * L + j] = t;
      attn[r * L + j] = 1;
      if (j > 0 && s.trainMask[j]) {
        mask[r * (L - 1) + j - 1] = s.trainMask[j]; // 1, or an SFT message's loss weight
        if (old) old[r * (L - 1) + j - 1] = s.sampleLogp?.[j] ?? 0;
      }
    });
  });
  return {
    ids: tf.tensor2d(ids, [b, L], 'int32'),
    attn: tf.tensor2d(attn, [b, L], 'int32'),
    mask: tf.tensor2d(mask, [b, L - 1]),
    sampleLogp: old ? tf.tensor2d(old, [b, L - 1]) : undefined,
  };
}

export function disposeBatch(p: PaddedBatch): void {
  tf.dispose([p.ids, p.attn, p.mask, ...(p.sampleLogp ? [p.sampleLogp] : [])]);
}

/** Indices grouped into micro-batches of at most `size`, longest sequences first (less padding). */
export function microBatchOrder(lengths: readonly number[], size: number): number[][] {
  if (!(Number.isInteger(size) && size >= 1))
    throw new Error(`microBatchOrder: size must be an integer >= 1, got ${size}`);
  const order = lengths.map((_, i) => i).sort((a, b) => (lengths[b] as number) - (lengths[a] as number) || a - b);
  const out: number[][] = [];
  for (let k = 0; k < order.length; k += size) out.push(order.slice(k, k + size));
  return out;
}

/** Trained tokens of a sequence. */
export function trainedTokens(s: SftSequence): number {
  return s.trainMask.reduce((a, m) => a + (m ? 1 : 0), 0);
}
