import * as tf from '@tensorflow/tfjs';
import type { LayerKv } from '../model/attention.ts';

/** Half-open column ranges [start, end) of a row's real tokens, in order. */
export type ColumnRuns = readonly (readonly [number, number])[];

/**
 * Keys/values of every layer for the sequences still generating, plus their key mask. Owns its
 * tensors: each update disposes the previous ones, so the tensor count stays flat over a decode.
 * With `runs` (the real columns of each row after the prefill; every later column is a decoded
 * token) a row's keys/values can be taken out without padding (rowKv), for the prefix cache.
 */
export class KvCache {
  private readonly prefillWidth: number;

  constructor(
    private layers: LayerKv[],
    private mask: tf.Tensor2D, // [B, Tk] 1 = real token
    private readonly kvHeads: number,
    private runs?: ColumnRuns[],
  ) {
    this.prefillWidth = mask.shape[1];
  }

  /**
   * Keys/values of batch row r's real tokens, per layer [KV, n, hd] (new tensors the caller owns),
   * n = its prefilled tokens + the decode steps fed since.
   */
  rowKv(r: number): LayerKv[] {
    if (!this.runs) throw new Error('KvCache: built without column runs');
    const tk = this.mask.shape[1];
    const runs = [
      ...(this.runs[r] as ColumnRuns),
      ...(tk > this.prefillWidth ? [[this.prefillWidth, tk] as const] : []),
    ].filter(([a, b]) => b > a);
    const kv = this.kvHeads;
    return tf.tidy(() =>
      this.layers.map((l) => {
        const hd = l.k.shape[2];
        const part = (x: tf.Tensor3D): tf.Tensor3D => {
          // [KV, b-a, hd]
          const pieces = runs.map(([a, b]) => tf.slice(x, [r * kv, a, 0], [kv, b - a, hd]) as tf.Tensor3D);
          // [KV, n, hd]
          return (pieces.length === 1 ? tf.clone(pieces[0] as tf.Tensor3D) : tf.concat(pieces, 1)) as tf.Tensor3D;
        };
        return { k: part(l.k), v: part(l.v) };
      }),
    );
  }

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
    // [B, Tk+1]
    return tf.tidy(() => tf.concat([this.mask, tf.ones([this.mask.shape[0], 1], 'float32')], 1) as tf.Tensor2D);
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
        layers: this.layers.map((l) => ({
          k: tf.gather(l.k, fi) as tf.Tensor3D,
          v: tf.gather(l.v, fi) as tf.Tensor3D,
        })),
        mask: tf.gather(this.mask, bi) as tf.Tensor2D,
      };
    });
    this.update(next.layers, next.mask);
    if (this.runs) this.runs = rows.map((r) => this.runs?.[r] as ColumnRuns);
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
