/**
 * The decoder stack as pure functions of (config, weights, inputs): embedding, N x [RMSNorm ->
 * attention -> residual -> RMSNorm -> SwiGLU -> residual], final RMSNorm.
 * One code path serves training, prefill and cached decoding, so their logits agree.
 */
import * as tf from '@tensorflow/tfjs';
import type { ModelConfig } from './config.ts';
import { EMBED, FINAL_NORM, LM_HEAD, layerNames } from './weight-map.ts';
import { attention, attentionBias, type LayerKv, type WeightGetter } from './attention.ts';
import { INFER_OPS, TRAIN_OPS, type OpSet } from './ops/op-set.ts';
import { tidyObject } from './tidy.ts';
import { rmsNorm } from './ops/norm.ts';
import { siluGate } from './ops/swiglu.ts';
import { ropeTables, type RopeTables } from './ops/rope.ts';
import type { LoraLookup } from './lora.ts';
import { project } from './project.ts';
import { matmulWeight } from './ops/linear.ts';

/** RoPE positions from an attention mask: the index of each token among the real ones (HF: cumsum - 1). */
export function positionsFromMask(mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => tf.maximum(tf.sub(tf.cumsum(tf.cast(mask, 'float32'), 1), 1), 0) as tf.Tensor2D); // [B, T]
}

function swiglu(
  x: tf.Tensor2D,
  c: ModelConfig,
  w: WeightGetter,
  i: number,
  ops: OpSet,
  lora: LoraLookup | undefined,
): tf.Tensor2D {
  const n = layerNames(c, i);
  const opt = (name: string | undefined): tf.Tensor1D | undefined =>
    name === undefined ? undefined : (w(name) as tf.Tensor1D);
  const g = project(ops, x, w, n.gate, opt(n.gateBias), lora); // [N, I]
  const u = project(ops, x, w, n.up, opt(n.upBias), lora); // [N, I]
  const act = siluGate(g, u); // [N, I] silu(g) * u
  return project(ops, act, w, n.down, opt(n.downBias), lora); // [N, D]
}

export interface DecoderInput {
  ids: tf.Tensor2D; // [B, T] int32
  positions: tf.Tensor2D; // [B, T] float32 RoPE positions
  keyMask: tf.Tensor2D; // [B, past + T] 1 = real token
  past?: LayerKv[]; // per layer, keys/values of the first `past` tokens
  keepKv?: boolean; // return every layer's keys/values (past ++ new) for a cache
  ops?: OpSet; // default TRAIN_OPS (differentiable); INFER_OPS for prefill/decode
  lora?: LoraLookup; // LoRA adapters of this forward (lora.ts); undefined = the base model
  /**
   * Activation checkpointing (training only): the names of layer i's weights that need gradients.
   * Each layer then keeps only its input for the backward pass and recomputes its inside there.
   */
  checkpoint?: (layer: number) => string[];
}

/**
 * A decoder layer as a custom-gradient op over its input and its trainable weights (activation
 * checkpointing, Chen et al. 2016, arXiv:1604.06174): the forward frees every activation inside the
 * layer and saves only x and the layer's constant inputs (RoPE tables, attention bias: the forward's
 * scope frees them before the backward runs); the backward runs the layer again under a tape and
 * differentiates it. Dropout masks are seeded per forward, so the recomputation draws the same ones.
 */
function checkpointedLayer(
  x: tf.Tensor2D,
  consts: readonly tf.Tensor[],
  names: readonly string[],
  w: WeightGetter,
  body: (x: tf.Tensor2D, w: WeightGetter, consts: readonly tf.Tensor[]) => tf.Tensor2D,
): tf.Tensor2D {
  const weights = names.map((name) => w(name));
  const withInputs = (ws: readonly tf.Tensor[]): WeightGetter => {
    const own = new Map(names.map((name, k) => [name, ws[k] as tf.Tensor]));
    return (name) => own.get(name) ?? w(name);
  };
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const save = args[args.length - 1] as tf.GradSaveFunc;
    const [xIn, ...ws] = args.slice(0, -1) as tf.Tensor[];
    save([xIn as tf.Tensor, ...consts, ...ws]);
    return {
      value: tf.tidy(() => body(xIn as tf.Tensor2D, withInputs(ws), consts)), // [N, D]
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const sc = saved.slice(1, 1 + consts.length);
        const sw = saved.slice(1 + consts.length);
        const f = (...xs: tf.Tensor[]): tf.Tensor => body(xs[0] as tf.Tensor2D, withInputs(xs.slice(1)), sc);
        // The outer backward runs with no tape open, so this inner tf.grads starts a fresh one and,
        // when done, clears the engine's active tape (tfjs 4.22 engine.gradients). The outer
        // gradients call then frees its own tape's saved tensors through that field: restore it.
        const state = tf.engine().state;
        const outerTape = state.activeTape;
        try {
          return tf.grads(f)([saved[0] as tf.Tensor, ...sw], dy);
        } finally {
          state.activeTape = outerTape;
        }
      },
    };
  });
  return tf.tidy('checkpointedLayer', () => op(x, ...weights)) as tf.Tensor2D; // [N, D]; named scope for tf.profile
}

/** One decoder block on x [B*T, D]: attention and SwiGLU with their residuals. */
function block(
  x: tf.Tensor2D,
  c: ModelConfig,
  w: WeightGetter,
  i: number,
  dims: { b: number; t: number; rope: RopeTables; bias: tf.Tensor4D; keep: boolean; ops: OpSet; lora?: LoraLookup },
  past: LayerKv | undefined,
  kv: LayerKv[],
): tf.Tensor2D {
  const n = layerNames(c, i);
  const a = attention(
    rmsNorm(x, w(n.inputNorm) as tf.Tensor1D, c.rmsEps),
    dims.b,
    dims.t,
    c,
    n,
    w,
    dims.rope,
    dims.bias,
    past,
    dims.keep,
    dims.ops,
    dims.lora,
  );
  if (a.kv) kv.push(a.kv);
  const h = tf.add(x, a.out) as tf.Tensor2D; // [B*T, D]
  return tf.add(
    h,
    swiglu(rmsNorm(h, w(n.postNorm) as tf.Tensor1D, c.rmsEps), c, w, i, dims.ops, dims.lora),
  ) as tf.Tensor2D; // [B*T, D]
}

/**
 * One layer in its own scope: what the layer computes inside is freed as soon as it returns (under a
 * tape the engine keeps what the backward needs), so a forward holds one layer's intermediates at a
 * time, not every layer's until its outer scope ends. An inference forward (INFER_OPS: no gradient)
 * also frees the layer's input once the output exists, unless the input is the forward's own.
 */
function layerScope(
  x: tf.Tensor2D,
  ops: OpSet,
  run: (x: tf.Tensor2D, kv: LayerKv[]) => tf.Tensor2D,
  kv: LayerKv[],
): tf.Tensor2D {
  const out = tidyObject(() => {
    const layerKv: LayerKv[] = [];
    return { y: run(x, layerKv), layerKv };
  });
  kv.push(...out.layerKv);
  if (ops === INFER_OPS && x !== out.y && !x.kept) x.dispose();
  return out.y; // [B*T, D]
}

/** Final-normed hidden states [B*T, D] and every layer's keys/values (past ++ new). */
export function decoderHidden(
  c: ModelConfig,
  w: WeightGetter,
  inp: DecoderInput,
): { hidden: tf.Tensor2D; kv: LayerKv[] } {
  const [b, t] = inp.ids.shape;
  const first = inp.past?.[0];
  const pastLen = first ? (first.length ?? first.v.shape[1]) : 0;
  const keep = inp.keepKv ?? inp.past !== undefined;
  if (inp.keyMask.shape[1] !== pastLen + t) {
    throw new Error(`decoder: keyMask has ${inp.keyMask.shape[1]} columns, expected past ${pastLen} + new ${t}`);
  }
  const rope = ropeTables(inp.positions, c.headDim, c.rope); // [B, T, 1, hd/2] x2
  const bias = attentionBias(inp.keyMask, t, pastLen); // [B, 1, T, Tk]
  const ops = inp.ops ?? TRAIN_OPS;
  let x = ops.embed(w(EMBED) as tf.Tensor2D, tf.reshape(inp.ids, [b * t]) as tf.Tensor1D); // [B*T, D]
  const kv: LayerKv[] = [];
  const dims = { b, t, rope, bias, keep, ops, lora: inp.lora };
  if (inp.checkpoint && (keep || inp.past))
    throw new Error('decoder: activation checkpointing is for training forwards (no KV cache)');
  for (let i = 0; i < c.layers; i++) {
    const names = inp.checkpoint?.(i);
    x =
      names && names.length > 0
        ? checkpointedLayer(x, [rope.cos, rope.sin, bias], names, w, (xi, wi, [cos, sin, bi]) =>
            block(
              xi,
              c,
              wi,
              i,
              { ...dims, rope: { cos: cos as tf.Tensor4D, sin: sin as tf.Tensor4D }, bias: bi as tf.Tensor4D },
              undefined,
              [],
            ),
          ) // [B*T, D]
        : layerScope(x, ops, (xi, layerKv) => block(xi, c, w, i, dims, inp.past?.[i], layerKv), kv); // [B*T, D]
  }
  return { hidden: rmsNorm(x, w(FINAL_NORM) as tf.Tensor1D, c.rmsEps), kv }; // [B*T, D]
}

/**
 * The LM head of inference (CausalLM.inferenceHead; the caller disposes it): [D, V], transposed once
 * per generate call (on the wasm backend's own kernels a transposed operand costs more than a whole
 * decode step's matmuls), or for a large tied table, where the native kernels serve the backend, the
 * table [V, D] itself through the GEMM's transpose flag (a reshape shares its data: at Qwen3-0.6B's
 * shape that saves a 0.58 GiB copy per call).
 */
export class InferenceHead {
  constructor(
    readonly w: tf.Tensor2D, // [V, D] when transposeB, else [D, V]
    readonly transposeB: boolean,
  ) {}

  dispose(): void {
    this.w.dispose();
  }
}

/** LM head: hidden [N, D] -> logits [N, V] (tied: hidden @ embed_tokens^T); `head` for inference. */
export function lmHead(
  c: ModelConfig,
  w: WeightGetter,
  hidden: tf.Tensor2D,
  head?: InferenceHead,
  ops: OpSet = TRAIN_OPS,
): tf.Tensor2D {
  if (head) return matmulWeight(hidden, head.w, head.transposeB); // [N, V] inference only (no custom gradient)
  return c.tieEmbeddings
    ? ops.matmulBT(hidden, w(EMBED) as tf.Tensor2D)
    : ops.linear(hidden, w(LM_HEAD) as tf.Tensor2D); // [N, V]
}
