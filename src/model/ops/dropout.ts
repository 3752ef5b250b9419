import * as tf from '@tensorflow/tfjs';

/**
 * Inverted dropout (Srivastava et al. 2014) with a counter-based mask: element i of a call with
 * `seed` is kept when a 32-bit hash of (seed, i) is at least rate * 2^32, and kept values are scaled
 * by 1 / (1 - rate). The mask depends on (seed, i) alone, so a recomputation (activation
 * checkpointing) with the same seed draws the same one. tf.dropout draws its uniforms one at a time
 * through seedrandom in JavaScript and rounds them with tfjs's JS Floor kernel: on the adapter inputs
 * of a LoRA update (~10,000 values per token per layer, twice with recomputation) that took about as
 * long as the layer's GEMMs; this loop is a few multiplies per value.
 */
export function dropoutMask(size: number, rate: number, seed: number): Float32Array {
  if (!(rate >= 0 && rate < 1)) throw new Error(`dropout: rate must be in [0, 1), got ${rate}`);
  const out = new Float32Array(size);
  const keep = 1 / (1 - rate);
  const threshold = Math.min(2 ** 32 - 1, Math.floor(rate * 2 ** 32));
  const s = Math.imul(seed | 0, 0x9e3779b9) ^ 0x85ebca6b;
  for (let i = 0; i < size; i++) out[i] = hash32(s ^ Math.imul(i, 0x2c1b3c6d)) >= threshold ? keep : 0;
  return out;
}

/** A 32-bit integer hash with good avalanche (lowbias32, C. Wellons' hash-prospector), unsigned. */
export function hash32(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/** x * mask (the mask a constant: the gradient is mask * dy), for rate > 0; x itself at rate 0. */
export function dropout<T extends tf.Tensor>(x: T, rate: number, seed: number): T {
  if (rate === 0) return x;
  // same shape as x
  return tf.tidy(() => tf.mul(x, tf.tensor(dropoutMask(x.size, rate, seed), x.shape, 'float32'))) as T;
}
