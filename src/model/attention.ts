import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from './config.ts';
import type { LayerNames } from './weight-map.ts';
import type { OpSet } from './ops/op-set.ts';
import { rmsNorm } from './ops/norm.ts';
import { applyRopeQK, type RopeTables } from './ops/rope.ts';
import type { LoraLookup } from './lora.ts';
import { project } from './project.ts';
import { permute, sdpa, sdpaBuffered, sdpaCached } from './ops/sdpa.ts';
import { kvWriteInPlace } from '../backend/native/index.ts';

/** Looks a weight up by HF name (linear weights come back stored [in, out]). */
export type WeightGetter = (name: string) => tf.Tensor;

/**
 * Keys and values of one layer, both [B*KV, Tk, hd] so a decode step appends along axis 1 (whole
 * contiguous blocks; a last-axis concat is a strided copy, slow on wasm) and never transposes the cache.
 * With `length`, k and v are preallocated buffers [B*KV, cap, hd] of which the first `length` columns
 * hold keys (generation's KvCache): a pass writes its new keys into the next columns in place and
 * attends to the filled ones, so no step copies the cache.
 */
export interface LayerKv {
  k: tf.Tensor3D; // [B*KV, Tk, hd], or [B*KV, cap, hd] with `length`
  v: tf.Tensor3D; // [B*KV, Tk, hd], or [B*KV, cap, hd] with `length`
  length?: number;
}

/**
 * Additive attention bias [B, 1, T, Tk]: 0 where query t (absolute index past + t) may see key k
 * (k <= past + t and the key is a real token), -1e9 elsewhere. -1e9 rather than -Infinity keeps a
 * padding query whose keys are all masked finite (uniform weights; its output is masked later).
 */
export function attentionBias(keyMask: tf.Tensor2D, queries: number, past: number): tf.Tensor4D {
  return tf.tidy(() => {
    const [b, tk] = keyMask.shape;
    if (queries === 1 && tk === past + 1) {
      // A decode step's query is the newest token: causality allows every key, only padding is masked.
      // [B, 1, 1, Tk]
      return tf.reshape(tf.mul(tf.sub(tf.cast(keyMask, 'float32'), 1), 1e9), [b, 1, 1, tk]) as tf.Tensor4D;
    }
    const kIdx = tf.expandDims(tf.range(0, tk, 1, 'int32'), 0); // [1, Tk]
    const qIdx = tf.expandDims(tf.range(past, past + queries, 1, 'int32'), 1); // [T, 1]
    const causal = tf.cast(tf.lessEqual(kIdx, qIdx), 'float32'); // [T, Tk]
    const allowed = tf.mul(
      tf.reshape(causal, [1, 1, queries, tk]),
      tf.reshape(tf.cast(keyMask, 'float32'), [b, 1, 1, tk]),
    ); // [B, 1, T, Tk]
    return tf.mul(tf.sub(allowed, 1), 1e9) as tf.Tensor4D; // [B, 1, T, Tk]
  });
}

/**
 * Grouped-query self-attention of one layer (HF LlamaAttention / Qwen2Attention / Qwen3Attention).
 * A whole sequence goes through sdpa, a decode step through sdpaCached against the cache
 * (ops/sdpa.ts: fused kernels where the native ones serve the backend; grouped-query heads read
 * their kv head without a repeated copy).
 */
export function attention(
  x: tf.Tensor2D, // [B*T, D] normed input
  batch: number,
  seq: number,
  c: ModelConfig,
  n: LayerNames,
  w: WeightGetter,
  rope: RopeTables,
  bias: tf.Tensor4D, // [B, 1, T, Tk]
  past: LayerKv | undefined,
  keepKv: boolean, // return this layer's keys/values (prefill and decode; not training)
  ops: OpSet,
  lora?: LoraLookup, // adapters of this forward (lora.ts); undefined: the base model
): { out: tf.Tensor2D; kv: LayerKv | undefined } {
  const { heads: H, kvHeads: KV, headDim: hd } = c;
  const opt = (name: string | undefined): tf.Tensor1D | undefined =>
    name === undefined ? undefined : (w(name) as tf.Tensor1D);
  let q = tf.reshape(project(ops, x, w, n.q, opt(n.qBias), lora), [batch, seq, H, hd]) as tf.Tensor4D; // [B, T, H, hd]
  // [B, T, KV, hd]
  let k = tf.reshape(project(ops, x, w, n.k, opt(n.kBias), lora), [batch, seq, KV, hd]) as tf.Tensor4D;
  // [B, T, KV, hd]
  const v = tf.reshape(project(ops, x, w, n.v, opt(n.vBias), lora), [batch, seq, KV, hd]) as tf.Tensor4D;
  if (n.qNorm !== undefined && n.kNorm !== undefined) {
    // Qwen3: RMSNorm over head_dim of each head, before RoPE.
    q = rmsNorm(q, w(n.qNorm) as tf.Tensor1D, c.rmsEps); // [B, T, H, hd]
    k = rmsNorm(k, w(n.kNorm) as tf.Tensor1D, c.rmsEps); // [B, T, KV, hd]
  }
  [q, k] = applyRopeQK(q, k, rope); // [B, T, H, hd], [B, T, KV, hd]
  const scale = 1 / Math.sqrt(hd);
  const toCache = (x: tf.Tensor4D): tf.Tensor3D =>
    tf.reshape(permute(x, [0, 2, 1, 3]), [batch * KV, seq, hd]) as tf.Tensor3D; // [B*KV, T, hd]
  if (!past) {
    // A whole sequence (training, scoring, prefill): the cache, when kept, is [B*KV, T, hd].
    const ctx = sdpa(q, k, v, bias, scale, ops); // [B, T, H, hd]
    // [B*T, D]
    const out = project(ops, tf.reshape(ctx, [batch * seq, H * hd]) as tf.Tensor2D, w, n.o, opt(n.oBias), lora);
    if (!keepKv) return { out, kv: undefined };
    return { out, kv: { k: toCache(k), v: toCache(v) } };
  }
  if (past.length !== undefined) {
    // A preallocated cache: the new keys and values go into its next columns, in place.
    const at = past.length;
    kvWriteInPlace(past.k, toCache(k), at); // [B*KV, at..at+T, hd] of [B*KV, cap, hd]
    kvWriteInPlace(past.v, toCache(v), at); // [B*KV, at..at+T, hd] of [B*KV, cap, hd]
    const ctx = sdpaBuffered(q, past.k, past.v, at + seq, bias, scale); // [B, T, H, hd]
    // [B*T, D]
    const out = project(ops, tf.reshape(ctx, [batch * seq, H * hd]) as tf.Tensor2D, w, n.o, opt(n.oBias), lora);
    return { out, kv: { k: past.k, v: past.v, length: at + seq } };
  }
  // Decode (and any pass after cached keys): the new keys and values join the cache.
  const kAll = tf.concat([past.k, toCache(k)], 1) as tf.Tensor3D; // [B*KV, Tk, hd]
  const vAll = tf.concat([past.v, toCache(v)], 1) as tf.Tensor3D; // [B*KV, Tk, hd]
  const ctx = sdpaCached(q, kAll, vAll, bias, scale, ops); // [B, T, H, hd]
  // [B*T, D]
  const out = project(ops, tf.reshape(ctx, [batch * seq, H * hd]) as tf.Tensor2D, w, n.o, opt(n.oBias), lora);
  return { out, kv: { k: kAll, v: vAll } };
}
