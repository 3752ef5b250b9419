import * as tf from '@tensorflow/tfjs';
import { activeNativeContext } from './active.ts';
import type { KernelBackend } from './context.ts';

/**
 * In-place writes into a preallocated KV cache (src/generation/kv-cache.ts): a decode step's new keys
 * or values go into the next free columns of a [B*KV, cap, hd] buffer, one native pass (native/src/
 * attention.cc kvWrite) on the wasm heap or in the `native` backend's arrays, instead of a concat that
 * copies the whole cache every step. tfjs tensors are immutable by contract: only the owner of a
 * buffer that no other tensor shares may write it, and it must do so before any kernel reads it.
 */

/** Whether the active backend can write a KV buffer in place (the loaded binary has kvWrite). */
export function kvWriteReady(): boolean {
  return activeNativeContext()?.has('kvWrite') ?? false;
}

/** Writes x [N, n, hd] into columns [at, at + n) of buf [N, cap, hd], in place. */
export function kvWriteInPlace(buf: tf.Tensor3D, x: tf.Tensor3D, at: number): void {
  const ctx = activeNativeContext();
  if (!ctx?.has('kvWrite')) throw new Error('kvWriteInPlace: the active backend has no native kvWrite');
  const [n, cap, hd] = buf.shape;
  const [xn, cols, xhd] = x.shape;
  if (buf.dtype !== 'float32' || x.dtype !== 'float32' || xn !== n || xhd !== hd)
    throw new Error(`kvWriteInPlace: x [${x.shape.join(', ')}] does not fit buffer [${buf.shape.join(', ')}]`);
  if (!Number.isInteger(at) || at < 0 || at + cols > cap)
    throw new Error(`kvWriteInPlace: columns [${at}, ${at + cols}) do not fit a capacity of ${cap}`);
  const backend = tf.backend() as unknown as KernelBackend;
  if (backend.refCount(buf.dataId) > 1 || ctx.sharesMemory(backend, buf))
    throw new Error('kvWriteInPlace: the buffer is shared with another tensor');
  if (n * cols * hd === 0) return;
  ctx.invoke(backend, 'kvWrite', 'kvWrite', [buf, x], [n, cap, cols, at, hd]);
}
