/**
 * The attention kernels (native/src/attention.cc): probs = softmax(scale * q k^T + bias) per head,
 * ctx = probs v, and their gradients. q and ctx stay [B, T, H, hd]; k and v are [B, Tk, KV, hd] (as
 * the projections leave them) or a KV cache [B*KV, Tk, hd] (rank 3); probs is [B, H, T, Tk], bias
 * [B, 1, T, Tk]. A gradient of k or v comes in their layout. The forward kernels also read the first
 * `attrs.length` columns of a preallocated cache [B*KV, cap, hd] (kv-write.ts fills it in place), so
 * a decode step never copies the cache; Tk is then that length.
 */
import type { TensorInfo } from '@tensorflow/tfjs';
import { FUSED_KERNELS, float32, fused } from './fused.ts';
import { sizeOf, type KernelOverride } from './types.ts';

interface AttnDims {
  b: number;
  t: number;
  tk: number;
  h: number;
  kv: number;
  hd: number;
  /** k and v are a cache [B*KV, Tk, hd]. */
  cache: boolean;
  /** Columns of the cache tensor (>= tk); 0 where the cache is exactly tk wide. */
  cap: number;
}

function fail(name: string, why: string): never {
  throw new Error(`${name}: ${why}`);
}

const shapeOf = (t: TensorInfo | readonly number[]): string => `[${('shape' in t ? t.shape : t).join(', ')}]`;

/**
 * The dims of q [B, T, H, hd] and k (or v) [B, Tk, KV, hd] or [B*KV, Tk, hd], checked against each other;
 * with `length`, k is a cache [B*KV, cap, hd] of which the first `length` columns are read.
 */
function qkDims(name: string, qShape: readonly number[], k: TensorInfo, length?: unknown): AttnDims {
  const q = qShape;
  const cache = k.shape.length === 3;
  if (q.length !== 4 || (k.shape.length !== 4 && !cache))
    fail(
      name,
      `expects q [B, T, H, hd] and k, v [B, Tk, KV, hd] or [B*KV, Tk, hd], got ${shapeOf(q)} and ${shapeOf(k)}`,
    );
  const [b, t, h, hd] = q as [number, number, number, number];
  const [kb, tk, kv, khd] = cache
    ? [b, k.shape[1]!, b > 0 ? k.shape[0]! / b : 1, k.shape[2]!]
    : (k.shape as [number, number, number, number]);
  if (kb !== b || khd !== hd || !Number.isInteger(kv) || kv < 1 || h % kv !== 0)
    fail(name, `q ${shapeOf(q)} and k, v ${shapeOf(k)} do not pair (same B and hd, H a multiple of KV)`);
  if (b * t > 0 && (tk < 1 || hd < 1)) fail(name, `empty keys or heads: q ${shapeOf(q)}, k ${shapeOf(k)}`);
  if (length === undefined) return { b, t, tk, h, kv, hd, cache, cap: 0 };
  if (!cache || typeof length !== 'number' || !Number.isInteger(length) || length < 1 || length > tk)
    fail(name, `length ${String(length)} needs a cache [B*KV, cap, hd] with 1 <= length <= cap, got k ${shapeOf(k)}`);
  return { b, t, tk: length, h, kv, hd, cache, cap: tk };
}

function needShape(name: string, what: string, x: TensorInfo, shape: number[]): void {
  if (x.shape.join() !== shape.join()) fail(name, `${what} is ${shapeOf(x)}, expected [${shape.join(', ')}]`);
}

const dimArgs = (d: AttnDims): number[] => [d.b, d.t, d.tk, d.h, d.kv, d.hd, d.cache ? 1 : 0];
const probsShape = (d: AttnDims): number[] => [d.b, d.h, d.t, d.tk];

/**
 * softmax(scale * q k^T + bias) per head. inputs {q, k, bias [B, 1, T, Tk]}, attrs {scale, length?} -> [B, H, T,
 * Tk].
 */
const attnProbs = fused('attnProbs', ({ inputs, backend, attrs }, ctx, call) => {
  const name = FUSED_KERNELS.attnProbs;
  const { q, k, bias } = inputs as { q: TensorInfo; k: TensorInfo; bias: TensorInfo };
  float32(name, q, k, bias);
  const d = qkDims(name, q.shape, k, attrs['length']);
  needShape(name, 'bias', bias, [d.b, 1, d.t, d.tk]);
  const out = ctx.output(backend, probsShape(d), 'float32'); // [B, H, T, Tk]
  if (d.b * d.t > 0) call([q, k, bias, out], [...dimArgs(d), attrs['scale'] as number, d.cap]);
  return out;
});

/**
 * The gradient of attnProbs in q (attrs.part 'q') or k ('k'). inputs {dy, probs [B, H, T, Tk], q, k}, attrs {scale,
 * part}.
 */
const attnProbsGrad = fused('attnProbsGrad', ({ inputs, backend, attrs }, ctx, call) => {
  const name = FUSED_KERNELS.attnProbsGrad;
  const { dy, probs, q, k } = inputs as { dy: TensorInfo; probs: TensorInfo; q: TensorInfo; k: TensorInfo };
  float32(name, dy, probs, q, k);
  const d = qkDims(name, q.shape, k);
  needShape(name, 'probs', probs, probsShape(d));
  needShape(name, 'dy', dy, probsShape(d));
  const wantQ = attrs['part'] === 'q';
  const out = ctx.output(backend, wantQ ? [...q.shape] : [...k.shape], 'float32'); // [B, T, H, hd] or [B, Tk, KV, hd]
  // an empty query gives zero key gradients
  if (sizeOf(out.shape) > 0) call([dy, probs, q, k, out], [...dimArgs(d), attrs['scale'] as number, wantQ ? 0 : 1]);
  return out;
});

/**
 * probs v per head. inputs {probs [B, H, T, Tk], v [B, Tk, KV, hd] or [B*KV, Tk, hd]}, attrs {length?} -> [B, T, H,
 * hd].
 */
const attnApply = fused('attnApply', ({ inputs, backend, attrs }, ctx, call) => {
  const name = FUSED_KERNELS.attnApply;
  const { probs, v } = inputs as { probs: TensorInfo; v: TensorInfo };
  float32(name, probs, v);
  if (probs.shape.length !== 4) fail(name, `expects probs [B, H, T, Tk], got ${shapeOf(probs)}`);
  const [b, h, t] = probs.shape as [number, number, number, number];
  const d = qkDims(name, [b, t, h, v.shape[v.shape.length - 1] ?? 0], v, attrs['length']);
  needShape(name, 'probs', probs, probsShape(d));
  const out = ctx.output(backend, [d.b, d.t, d.h, d.hd], 'float32'); // [B, T, H, hd]
  if (d.b * d.t > 0) call([probs, v, out], [...dimArgs(d), d.cap]);
  return out;
});

/**
 * The gradient of attnApply in probs (attrs.part 'probs') or v ('v'). inputs {dy [B, T, H, hd], probs, v}, attrs
 * {part}.
 */
const attnApplyGrad = fused('attnApplyGrad', ({ inputs, backend, attrs }, ctx, call) => {
  const name = FUSED_KERNELS.attnApplyGrad;
  const { dy, probs, v } = inputs as { dy: TensorInfo; probs: TensorInfo; v: TensorInfo };
  float32(name, dy, probs, v);
  const d = qkDims(name, dy.shape, v);
  needShape(name, 'probs', probs, probsShape(d));
  const wantProbs = attrs['part'] === 'probs';
  // [B, H, T, Tk] or [B, Tk, KV, hd]
  const out = ctx.output(backend, wantProbs ? probsShape(d) : [...v.shape], 'float32');
  // an empty query gives zero value gradients
  if (sizeOf(out.shape) > 0) call([dy, probs, v, out], [...dimArgs(d), wantProbs ? 0 : 1]);
  return out;
});

export const attentionNative: KernelOverride[] = [attnProbs, attnProbsGrad, attnApply, attnApplyGrad];
