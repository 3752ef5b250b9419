import * as tf from '@tensorflow/tfjs';

/**
 * Next-token choice on the device: temperature, top-k, top-p (nucleus, Holtzman et
 * al. 2020), or greedy when temperature is 0. The randomness is one uniform per row drawn on the
 * host from the seeded Rng and uploaded (no device RNG, so a seed replays exactly); the only value
 * that comes back to the host is the chosen id and its logprob.
 */
export interface SamplingParams {
  /** 0 = greedy (argmax). */
  temperature: number;
  /** Keep the k most likely tokens; 0 = off. */
  topK: number;
  /** Keep the smallest set whose probability reaches p; 1 = off. */
  topP: number;
}

export function checkSampling(s: SamplingParams): void {
  if (!(s.temperature >= 0) || !Number.isFinite(s.temperature))
    throw new Error(`sampling: temperature must be >= 0 (got ${s.temperature})`);
  if (!Number.isInteger(s.topK) || s.topK < 0)
    throw new Error(`sampling: topK must be a non-negative integer (got ${s.topK})`);
  if (!(s.topP > 0 && s.topP <= 1)) throw new Error(`sampling: topP must be in (0, 1] (got ${s.topP})`);
}

/**
 * Index into each row by inverse CDF: the first j with cdf[j] > u * total. `masked`: entries past
 * the nucleus are 0 (top-p), so rounding at the very end must step back to the last entry with mass.
 */
function inverseCdf(probs: tf.Tensor2D, uniforms: tf.Tensor1D, masked: boolean): tf.Tensor1D {
  const [, k] = probs.shape;
  const cdf = tf.cumsum(probs, 1); // [B, K]
  const total = tf.slice(cdf, [0, k - 1], [-1, 1]); // [B, 1]
  const target = tf.mul(tf.expandDims(uniforms, 1), total); // [B, 1]
  const below = tf.sum(tf.cast(tf.lessEqual(cdf, target), 'int32'), 1); // [B]
  // int32 scalars throughout: a JS number operand promotes to float32, and mixed-dtype Minimum on wasm returns garbage.
  if (!masked) return tf.minimum(below, tf.scalar(k - 1, 'int32')) as tf.Tensor1D; // [B]
  // [B] masses are a prefix when sorted
  const lastWithMass = tf.sub(tf.sum(tf.cast(tf.greater(probs, 0), 'int32'), 1), tf.scalar(1, 'int32'));
  return tf.minimum(below, tf.maximum(lastWithMass, tf.scalar(0, 'int32'))) as tf.Tensor1D; // [B]
}

/** Row-wise gather: table [B, K], idx [B] -> [B]. */
function pickRows(table: tf.Tensor2D, idx: tf.Tensor1D): tf.Tensor1D {
  const [b, k] = table.shape;
  const flat = tf.add(tf.mul(tf.range(0, b, 1, 'int32'), tf.scalar(k, 'int32')), tf.cast(idx, 'int32')); // [B]
  return tf.gather(tf.reshape(table, [b * k]), flat) as tf.Tensor1D; // [B]
}

/**
 * logits [B, V] -> chosen ids [B] int32 and their log-probability under the model (untempered
 * log softmax, the quantity the trainer recomputes with tokenLogprobs). forced [B] int32: >= 0
 * overrides the choice (replay of recorded tokens), -1 samples; absent when no row is forced.
 */
export function sampleNext(
  logits: tf.Tensor2D,
  uniforms: tf.Tensor1D,
  forced: tf.Tensor1D | undefined,
  s: SamplingParams,
): { ids: tf.Tensor1D; logprobs: tf.Tensor1D } {
  return tf.tidy(() => {
    const [, v] = logits.shape;
    let chosen: tf.Tensor1D;
    if (s.temperature === 0) {
      chosen = tf.cast(tf.argMax(logits, 1), 'int32') as tf.Tensor1D; // [B]
    } else {
      const scaled = s.temperature === 1 ? logits : (tf.div(logits, s.temperature) as tf.Tensor2D); // [B, V]
      if (s.topK > 0 || s.topP < 1) {
        const k = s.topK > 0 ? Math.min(s.topK, v) : v;
        const { values, indices } = tf.topk(scaled, k, true); // [B, K] descending
        let probs = tf.softmax(values) as tf.Tensor2D; // [B, K]
        if (s.topP < 1) {
          const before = tf.sub(tf.cumsum(probs, 1), probs); // [B, K] mass of the more likely tokens
          // [B, K] the top one always stays
          probs = tf.mul(probs, tf.cast(tf.less(before, s.topP), 'float32')) as tf.Tensor2D;
        }
        chosen = pickRows(indices as tf.Tensor2D, inverseCdf(probs, uniforms, s.topP < 1)); // [B]
      } else {
        chosen = inverseCdf(tf.softmax(scaled) as tf.Tensor2D, uniforms, false); // [B]
      }
    }
    const ids = forced ? (tf.where(tf.greaterEqual(forced, 0), forced, chosen) as tf.Tensor1D) : chosen; // [B]
    const logZ = tf.logSumExp(logits, 1); // [B]
    const logprobs = tf.sub(pickRows(logits, ids), logZ) as tf.Tensor1D; // [B]
    return { ids: tf.cast(ids, 'int32') as tf.Tensor1D, logprobs };
  });
}
