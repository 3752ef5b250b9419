import * as tf from '@tensorflow/tfjs';
import { FUSED_KERNELS } from '../../backend/native/index.ts';
import { fusedHere, runFused } from './fused.ts';

/**
 * SwiGLU's gate silu(gate) * up (HF LlamaMLP: act_fn(gate_proj(x)) * up_proj(x)). One fused kernel
 * each way where the native kernels serve the backend, else the tfjs composition.
 */
export function siluGate<T extends tf.Tensor>(gate: T, up: T): T {
  if (fusedHere(FUSED_KERNELS.swiglu)) return runFused<T>(FUSED_KERNELS.swiglu, { gate, up }); // same shape as gate
  return siluGateComposed(gate, up);
}

/** The same as tfjs ops (backends without the fused kernel; the reference of its tests). */
export function siluGateComposed<T extends tf.Tensor>(gate: T, up: T): T {
  return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as T; // same shape as gate
}
