import * as tf from '@tensorflow/tfjs';
import { FUSED_KERNELS } from '../../backend/native/index.ts';
import { fusedHere, runFused } from './fused.ts';
import type { OpSet } from './op-set.ts';

/**
 * tf.transpose that becomes a free reshape when every moved axis but one has size 1 (a decode
 * step has T = 1, so its head swaps are pure relabelings): saves a copy kernel per call.
 */
export function permute<T extends tf.Tensor>(x: T, perm: number[]): T {
  const moved = perm.filter((p, i) => p !== i).map((p) => x.shape[p] as number);
  if (moved.filter((d) => d !== 1).length <= 1)
    return tf.reshape(
      x,
      perm.map((p) => x.shape[p] as number),
    ) as T;
  return tf.transpose(x, perm) as T;
}

/** The fused kernels (k and v in either layout) where they serve the backend, else undefined. */
function fusedAttention(
  q: tf.Tensor4D,
  k: tf.Tensor,
  v: tf.Tensor,
  bias: tf.Tensor4D,
  scale: number,
): tf.Tensor4D | undefined {
  if (!fusedAttentionHere()) return undefined;
  const probs = runFused<tf.Tensor4D>(FUSED_KERNELS.attnProbs, { q, k, bias }, { scale }); // [B, H, T, Tk]
  return runFused<tf.Tensor4D>(FUSED_KERNELS.attnApply, { probs, v }); // [B, T, H, hd]
}

/** The compositions' common end: softmax(scores + bias) v, heads back in place. */
function softmaxMix(
  scores: tf.Tensor3D, // [B*KV, rep*T, Tk]
  v: tf.Tensor3D, // [B*KV, Tk, hd]
  bias: tf.Tensor4D, // [B, 1, T, Tk]
  qShape: readonly number[], // [B, T, H, hd]
  ops: OpSet,
): tf.Tensor4D {
  const [batch, seq, H, hd] = qShape as [number, number, number, number];
  const [bkv, rows, tk] = scores.shape;
  const biased = tf.add(tf.reshape(scores, [batch, H, seq, tk]), bias); // [B, H, T, Tk]
  const probs = tf.reshape(tf.softmax(biased), [bkv, rows, tk]) as tf.Tensor3D; // [B*KV, rep*T, Tk]
  const ctx = tf.reshape(ops.bmm(probs, v), [batch, H, seq, hd]); // [B, H, T, hd]
  return permute(ctx, [0, 2, 1, 3]) as tf.Tensor4D; // [B, T, H, hd]
}

/**
 * Scaled dot-product attention over a whole sequence (training, scoring, prefill): per head,
 * softmax(scale * q k^T + bias) v, with grouped-query heads sharing their kv head (query head h reads
 * kv head h / (H / KV), as HF's repeat_kv). Where the native kernels serve the backend: two fused
 * kernels (probabilities, then their product with v), each with a fused gradient, reading the heads
 * in place; else the tfjs composition.
 */
export function sdpa(
  q: tf.Tensor4D, // [B, T, H, hd]
  k: tf.Tensor4D, // [B, Tk, KV, hd]
  v: tf.Tensor4D, // [B, Tk, KV, hd]
  bias: tf.Tensor4D, // [B, 1, T, Tk] additive (0 or -1e9)
  scale: number,
  ops: OpSet,
): tf.Tensor4D {
  return fusedAttention(q, k, v, bias, scale) ?? sdpaComposed(q, k, v, bias, scale, ops);
}

/**
 * The same as tfjs ops (backends without the fused kernels; the reference of their tests): heads
 * transposed out and grouped by the kv head they share, so q reshapes to [B*KV, rep*T, hd] and
 * multiplies the un-repeated keys directly (a reshape, not a copy).
 */
export function sdpaComposed(
  q: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  bias: tf.Tensor4D,
  scale: number,
  ops: OpSet,
): tf.Tensor4D {
  const [batch, seq, H, hd] = q.shape;
  const [, tk, KV] = k.shape;
  const rep = H / KV;
  const qs = tf.mul(permute(q, [0, 2, 1, 3]), scale); // [B, H, T, hd], scaled before the product (fewer values)
  const qg = tf.reshape(qs, [batch * KV, rep * seq, hd]) as tf.Tensor3D; // [B*KV, rep*T, hd]
  const kT = tf.reshape(tf.transpose(k, [0, 2, 3, 1]), [batch * KV, hd, tk]) as tf.Tensor3D; // [B*KV, hd, Tk]
  const vg = tf.reshape(permute(v, [0, 2, 1, 3]), [batch * KV, tk, hd]) as tf.Tensor3D; // [B*KV, Tk, hd]
  return softmaxMix(ops.bmm(qg, kT), vg, bias, q.shape, ops); // scores [B*KV, rep*T, Tk] -> [B, T, H, hd]
}

/**
 * Attention of new queries against a KV cache (decode steps, prefill after cached keys): q [B, T, H,
 * hd] against keys and values [B*KV, Tk, hd], the layout the cache keeps (src/model/attention.ts).
 * The same fused kernels where the native kernels serve the backend, else the composition.
 */
export function sdpaCached(
  q: tf.Tensor4D, // [B, T, H, hd]
  k: tf.Tensor3D, // [B*KV, Tk, hd]
  v: tf.Tensor3D, // [B*KV, Tk, hd]
  bias: tf.Tensor4D, // [B, 1, T, Tk]
  scale: number,
  ops: OpSet,
): tf.Tensor4D {
  return fusedAttention(q, k, v, bias, scale) ?? sdpaCachedComposed(q, k, v, bias, scale, ops);
}

/**
 * The same against the first `length` columns of preallocated buffers [B*KV, cap, hd] (the fused
 * kernels read them in place; kv-write's caller checks that they serve the backend): Tk = length.
 */
export function sdpaBuffered(
  q: tf.Tensor4D, // [B, T, H, hd]
  k: tf.Tensor3D, // [B*KV, cap, hd]
  v: tf.Tensor3D, // [B*KV, cap, hd]
  length: number,
  bias: tf.Tensor4D, // [B, 1, T, length]
  scale: number,
): tf.Tensor4D {
  const probs = runFused<tf.Tensor4D>(FUSED_KERNELS.attnProbs, { q, k, bias }, { scale, length }); // [B, H, T, Tk]
  return runFused<tf.Tensor4D>(FUSED_KERNELS.attnApply, { probs, v }, { length }); // [B, T, H, hd]
}

/** Whether the fused attention kernels serve the active backend (sdpaBuffered needs them). */
export function fusedAttentionHere(): boolean {
  return fusedHere(FUSED_KERNELS.attnProbs) && fusedHere(FUSED_KERNELS.attnApply);
}

/**
 * The same as tfjs ops: (K @ q^T)^T transposes only the small [rep*T, Tk] result, never the cache;
 * a decode step's head swaps (T = 1) are free reshapes.
 */
export function sdpaCachedComposed(
  q: tf.Tensor4D,
  k: tf.Tensor3D,
  v: tf.Tensor3D,
  bias: tf.Tensor4D,
  scale: number,
  ops: OpSet,
): tf.Tensor4D {
  const [batch, seq, H, hd] = q.shape;
  const [bkv] = k.shape;
  const rep = (H * batch) / bkv;
  const qs = tf.mul(permute(q, [0, 2, 1, 3]), scale); // [B, H, T, hd], scaled before the product (fewer values)
  const qgT = permute(tf.reshape(qs, [bkv, rep * seq, hd]) as tf.Tensor3D, [0, 2, 1]); // [B*KV, hd, rep*T]
  const scores = permute(ops.bmm(k, qgT), [0, 2, 1]); // [B*KV, Tk, rep*T] -> [B*KV, rep*T, Tk]
  return softmaxMix(scores, v, bias, q.shape, ops); // [B, T, H, hd]
}
