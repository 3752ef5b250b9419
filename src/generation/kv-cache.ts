import * as tf from '@tensorflow/tfjs';
import type { LayerKv } from '../model/attention.ts';
import { kvWriteReady } from '../backend/native/index.ts';
import { fusedAttentionHere } from '../model/ops/sdpa.ts';

/** Half-open column ranges [start, end) of a row's real tokens, in order. */
export type ColumnRuns = readonly (readonly [number, number])[];

/**
 * Keys/values of every layer for the sequences still generating, plus their key mask. Owns its
 * tensors: each update disposes the previous ones, so the tensor count stays flat over a decode.
 * With `runs` (the real columns of each row after the prefill; every later column is a decoded
 * token) a row's keys/values can be taken out without padding (rowKv), for the prefix cache.
 *
 * Where the backend writes in place (the native kernels' kvWrite and attention), `reserve` turns the
 * prefill's keys/values into preallocated buffers [B*KV, cap, hd] (LayerKv.length): each decode step
 * then writes one column instead of copying the whole cache into a one-column-wider tensor, the way
 * a hand-written PyTorch loop (or vLLM's block table) does. Attention reads the same values in the
 * same order either way, so logits are identical.
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
   * The rows of several prefilled caches (no decode step yet) as one, in order: each padded on the right to the widest
   * (masked columns), so prefill chunks bounded for their attention scores decode as one batch. Owns new tensors; the
   * parts stay the caller's.
   */
  static stack(parts: readonly KvCache[]): KvCache {
    const first = parts[0];
    if (!first) throw new Error('KvCache.stack: no parts');
    for (const p of parts)
      if (p.buffered || p.mask.shape[1] !== p.prefillWidth || p.layers.length !== first.layers.length)
        throw new Error('KvCache.stack: parts must be prefills of the same model with no decode step yet');
    const width = Math.max(...parts.map((p) => p.mask.shape[1]));
    const right = <T extends tf.Tensor2D | tf.Tensor3D>(x: T, w: number): T =>
      (w === width
        ? x
        : tf.pad(
            x,
            x.rank === 2
              ? [
                  [0, 0],
                  [0, width - w],
                ]
              : [
                  [0, 0],
                  [0, width - w],
                  [0, 0],
                ],
          )) as T;
    const { layers, mask } = tf.tidy(() => ({
      layers: first.layers.map((_, i) => {
        const of = (p: KvCache) => p.layers[i] as LayerKv;
        return {
          k: tf.concat(parts.map((p) => right(of(p).k, p.mask.shape[1]))), // [sum B*KV, width, hd]
          v: tf.concat(parts.map((p) => right(of(p).v, p.mask.shape[1]))), // [sum B*KV, width, hd]
        };
      }),
      mask: tf.concat(parts.map((p) => right(p.mask, p.mask.shape[1]))), // [sum B, width]
    }));
    const runs = parts.every((p) => p.runs !== undefined) ? parts.flatMap((p) => p.runs as ColumnRuns[]) : undefined;
    return new KvCache(layers, mask as tf.Tensor2D, first.kvHeads, runs);
  }

  /** Whether the layers are preallocated buffers written in place. */
  get buffered(): boolean {
    return this.layers[0]?.length !== undefined;
  }

  /**
   * Makes room for `extra` more columns without reallocation where the backend writes in place (else a
   * no-op: each step concatenates; SHARP_KV_BUFFERS=0 keeps the concatenation, to measure the buffers).
   * Grows by at least half the capacity when the buffers are full.
   */
  reserve(extra: number): void {
    const first = this.layers[0];
    if (!first) return;
    const length = first.length ?? first.k.shape[1];
    const cap = first.k.shape[1];
    if (first.length !== undefined && length + extra <= cap) return; // a decode step's usual case: room left
    if (process.env['SHARP_KV_BUFFERS'] === '0' || !kvWriteReady() || !fusedAttentionHere()) return;
    const want = first.length === undefined ? length + extra : Math.max(length + extra, Math.ceil(cap * 1.5));
    const grown = tf.tidy(() =>
      this.layers.map((l) => {
        // the filled columns, then room: [B*KV, want, hd]
        const room = (x: tf.Tensor3D): tf.Tensor3D => {
          const filled = x.shape[1] === length ? x : (tf.slice(x, [0, 0, 0], [-1, length, -1]) as tf.Tensor3D);
          return tf.pad(filled, [
            [0, 0],
            [0, want - length],
            [0, 0],
          ]);
        };
        return { k: room(l.k), v: room(l.v), length };
      }),
    );
    this.disposeLayers();
    this.layers = grown;
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

  /**
   * Replaces the layers with ones that hold past ++ new (from forwardCached) and the matching mask.
   * Buffers written in place come back as the same tensors: they are kept, not disposed.
   */
  update(layers: LayerKv[], mask: tf.Tensor2D): void {
    const kept = new Set<tf.Tensor>(layers.flatMap((l) => [l.k, l.v]));
    for (const l of this.layers) for (const t of [l.k, l.v]) if (!kept.has(t)) t.dispose();
    this.layers = [];
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
          k: tf.gather(l.k, fi) as tf.Tensor3D, // [B'*KV, Tk or cap, hd]
          v: tf.gather(l.v, fi) as tf.Tensor3D, // [B'*KV, Tk or cap, hd]
          ...(l.length !== undefined ? { length: l.length } : {}),
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
