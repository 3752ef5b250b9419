import * as tf from '@tensorflow/tfjs';
import { FUSED_KERNELS } from '../../backend/native/index.ts';
import { fusedHere, runFused } from './fused.ts';
import { ropeFrequencies } from '../rope/frequencies.ts';
import type { RopeSpec } from '../rope/spec.ts';

/**
 * Rotary position embedding in the Hugging Face rotate_half convention (HF checkpoints are permuted
 * for it): out = x * cos + rotate_half(x) * sin, rotate_half([x1, x2]) = [-x2, x1], with
 * cos/sin of pos * inv_freq[j] for j < d/2 (theta^(-2j/d), or a scaled variant: rope/frequencies.ts),
 * times the variant's attention scaling (YaRN), as Transformers' rotary embedding returns them.
 */
export interface RopeTables {
  cos: tf.Tensor4D; // [B, T, 1, hd/2]
  sin: tf.Tensor4D; // [B, T, 1, hd/2]
}

/** Inverse frequencies of a RoPE spec rounded to float32 once (HF keeps inv_freq in float32). */
export function inverseFrequencies(headDim: number, spec: RopeSpec): Float32Array {
  return Float32Array.from(ropeFrequencies(spec, headDim).invFreq);
}

/** positions [B, T] (float32 token positions) -> cos/sin tables broadcastable over heads. */
export function ropeTables(positions: tf.Tensor2D, headDim: number, spec: RopeSpec): RopeTables {
  const [b, t] = positions.shape;
  const { invFreq, attentionScaling } = ropeFrequencies(spec, headDim);
  const inv = tf.tensor1d(Float32Array.from(invFreq)); // [hd/2]
  const ang = tf.mul(tf.reshape(positions, [b, t, 1, 1]), inv); // [B, T, 1, hd/2]
  if (attentionScaling === 1) return { cos: tf.cos(ang) as tf.Tensor4D, sin: tf.sin(ang) as tf.Tensor4D };
  return {
    cos: tf.mul(tf.cos(ang), attentionScaling) as tf.Tensor4D,
    sin: tf.mul(tf.sin(ang), attentionScaling) as tf.Tensor4D,
  }; // [B, T, 1, hd/2] each
}

/**
 * x [B, T, H, hd] -> rotated [B, T, H, hd]: one fused kernel each way where the native kernels
 * serve the backend (the gradient is the rotation by the negative angle), else the tfjs composition.
 */
export function applyRope(x: tf.Tensor4D, r: RopeTables): tf.Tensor4D {
  if (fusedHere(FUSED_KERNELS.rope))
    // [B, T, H, hd]
    return runFused<tf.Tensor4D>(FUSED_KERNELS.rope, { x, cos: r.cos, sin: r.sin }, { inverse: false });
  return applyRopeComposed(x, r);
}

/** The same rotation as tfjs ops (backends without the fused kernel; the reference of its tests). */
export function applyRopeComposed(x: tf.Tensor4D, r: RopeTables): tf.Tensor4D {
  const [x1, x2] = tf.split(x, 2, 3) as [tf.Tensor4D, tf.Tensor4D]; // [B, T, H, hd/2] each
  const o1 = tf.sub(tf.mul(x1, r.cos), tf.mul(x2, r.sin)); // [B, T, H, hd/2]
  const o2 = tf.add(tf.mul(x2, r.cos), tf.mul(x1, r.sin)); // [B, T, H, hd/2]
  return tf.concat([o1, o2], 3) as tf.Tensor4D; // [B, T, H, hd]
}

/**
 * RoPE of a layer's queries [B, T, H, hd] and keys [B, T, KV, hd]: two fused kernels where they
 * serve the backend; else one composition over both (concatenated on the head axis: each
 * composition is ~10 small kernels).
 */
export function applyRopeQK(q: tf.Tensor4D, k: tf.Tensor4D, r: RopeTables): [tf.Tensor4D, tf.Tensor4D] {
  if (fusedHere(FUSED_KERNELS.rope)) return [applyRope(q, r), applyRope(k, r)]; // [B, T, H, hd], [B, T, KV, hd]
  const qk = applyRopeComposed(tf.concat([q, k], 2) as tf.Tensor4D, r); // [B, T, H+KV, hd]
  return tf.split(qk, [q.shape[2], k.shape[2]], 2) as [tf.Tensor4D, tf.Tensor4D]; // [B, T, H, hd], [B, T, KV, hd]
}
