import * as tf from '@tensorflow/tfjs';
import type { LayerKv } from '../model/attention.ts';

/**
 * Keys/values of every layer for the sequences still generating, plus their key mask. Owns its
 * tensors: each update disposes the previous ones, so the tensor count stays flat over a decode.
 */
export class KvCache {
  constructor(
    private layers: LayerKv[],
    private mask: tf.Tensor2D, // [B, Tk] 1 = real token
    private readonly kvHeads: number,
  ) {}

  get past(): LayerKv[] {
    return this.layers;
  }

  get keyMask(): tf.Tensor2D {
    return this.mask;
  }

  /** Replaces the layers with ones that hold past ++ new (from forwardCached) and the matching mask. */
  update(layers: LayerKv[], mask: tf.Tensor2D): void {
    this.disposeLayers();
    this.mask.dispose();
    this.layers = layers;
    this.mask = mask;
  }

  /** Mask for the next step: one more real column per row. */
  extendedMask(): tf.Tensor2D {
    return tf.tidy(() => tf.concat([this.mask, tf.ones([this.mask.shape[0], 1], 'float32')], 1) as tf.Tensor2D); // [B, Tk+1]
  }

  /** Keeps only batch rows `rows` (finished sequences drop out of the compute). */
  keepRows(rows: number[]): void {
    const kv = this.kvHeads;
    const flat: number[] = [];
    for (const r of rows) for (let j = 0; j < kv; j++) flat.push(r * kv + j);
    const next = tf.tidy(() => {
      const fi = tf.tensor1d(flat, 'int32'); // [B'*KV]
      const bi = tf.tensor1d(rows, 'int32'); // [B']
      return {
        layers: this.layers.map((l) => ({ k: tf.gather(l.k, fi) as tf.Tensor3D, v: tf.gather(l.v, fi) as tf.Tensor3D })),
        mask: tf.gather(this.mask, bi) as tf.Tensor2D,
      };
    });
    this.update(next.layers, next.mask);
  }

  dispose(): void {
    this.disposeLayers();
    this.mask.dispose();
  }

  private disposeLayers(): void {
    for (const l of this.layers) {
      l.k.dispose();
      l.v.dispose();
    }
    this.layers = [];
  }
}
