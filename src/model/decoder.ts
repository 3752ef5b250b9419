import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from './config.ts';
import { EMBED, FINAL_NORM, LM_HEAD, layerNames } from './weight-map.ts';
import { attention, attentionBias, type LayerKv, type WeightGetter } from './attention.ts';
import { TRAIN_OPS, type OpSet } from './ops/op-set.ts';
import { rmsNorm } from './ops/norm.ts';
import { ropeTables } from './ops/rope.ts';

/**
 * The decoder stack as pure functions of (config, weights, inputs): embedding, N x [RMSNorm ->
 * attention -> residual -> RMSNorm -> SwiGLU -> residual], final RMSNorm.
 * One code path serves training, prefill and cached decoding, so their logits agree.
 */

/** RoPE positions from an attention mask: the index of each token among the real ones (HF: cumsum - 1). */
export function positionsFromMask(mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => tf.maximum(tf.sub(tf.cumsum(tf.cast(mask, 'float32'), 1), 1), 0) as tf.Tensor2D); // [B, T]
}

function swiglu(x: tf.Tensor2D, c: ModelConfig, w: WeightGetter, i: number, ops: OpSet): tf.Tensor2D {
  const n = layerNames(c, i);
  const opt = (name: string | undefined): tf.Tensor1D | undefined => (name === undefined ? undefined : (w(name) as tf.Tensor1D));
  const g = ops.linear(x, w(n.gate) as tf.Tensor2D, opt(n.gateBias)); // [N, I]
  const u = ops.linear(x, w(n.up) as tf.Tensor2D, opt(n.upBias)); // [N, I]
  const act = tf.mul(tf.mul(g, tf.sigmoid(g)), u) as tf.Tensor2D; // [N, I] silu(g) * u
  return ops.linear(act, w(n.down) as tf.Tensor2D, opt(n.downBias)); // [N, D]
}

export interface DecoderInput {
  ids: tf.Tensor2D; // [B, T] int32
  positions: tf.Tensor2D; // [B, T] float32 RoPE positions
  keyMask: tf.Tensor2D; // [B, past + T] 1 = real token
  past?: LayerKv[]; // per layer, keys/values of the first `past` tokens
  keepKv?: boolean; // return every layer's keys/values (past ++ new) for a cache
  ops?: OpSet; // default TRAIN_OPS (differentiable); INFER_OPS for prefill/decode
}

/** Final-normed hidden states [B*T, D] and every layer's keys/values (past ++ new). */
export function decoderHidden(c: ModelConfig, w: WeightGetter, inp: DecoderInput): { hidden: tf.Tensor2D; kv: LayerKv[] } {
  const [b, t] = inp.ids.shape;
  const pastLen = inp.past?.[0]?.v.shape[1] ?? 0;
  const keep = inp.keepKv ?? inp.past !== undefined;
  if (inp.keyMask.shape[1] !== pastLen + t) {
    throw new Error(`decoder: keyMask has ${inp.keyMask.shape[1]} columns, expected past ${pastLen} + new ${t}`);
  }
  const rope = ropeTables(inp.positions, c.headDim, c.rope); // [B, T, 1, hd/2] x2
  const bias = attentionBias(inp.keyMask, t, pastLen); // [B, 1, T, Tk]
  const ops = inp.ops ?? TRAIN_OPS;
  let x = ops.embed(w(EMBED) as tf.Tensor2D, tf.reshape(inp.ids, [b * t]) as tf.Tensor1D); // [B*T, D]
  const kv: LayerKv[] = [];
  for (let i = 0; i < c.layers; i++) {
    const n = layerNames(c, i);
    const a = attention(rmsNorm(x, w(n.inputNorm) as tf.Tensor1D, c.rmsEps), b, t, c, n, w, rope, bias, inp.past?.[i], keep, ops);
    if (a.kv) kv.push(a.kv);
    x = tf.add(x, a.out); // [B*T, D]
    x = tf.add(x, swiglu(rmsNorm(x, w(n.postNorm) as tf.Tensor1D, c.rmsEps), c, w, i, ops)); // [B*T, D]
  }
  return { hidden: rmsNorm(x, w(FINAL_NORM) as tf.Tensor1D, c.rmsEps), kv }; // [B*T, D]
}

/**
 * LM head: hidden [N, D] -> logits [N, V] (tied: hidden @ embed_tokens^T). headT [D, V], when
 * given, is a pre-transposed tied head for inference: transposing a [V, D] table costs more than
 * a whole decode step's matmuls on wasm, so generation transposes it once per call.
 */
export function lmHead(c: ModelConfig, w: WeightGetter, hidden: tf.Tensor2D, headT?: tf.Tensor2D, ops: OpSet = TRAIN_OPS): tf.Tensor2D {
  if (headT) return tf.matMul(hidden, headT); // [N, V] inference only (no custom gradient needed)
  return c.tieEmbeddings ? ops.matmulBT(hidden, w(EMBED) as tf.Tensor2D) : ops.linear(hidden, w(LM_HEAD) as tf.Tensor2D); // [N, V]
}
