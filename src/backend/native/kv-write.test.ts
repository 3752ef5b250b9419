import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../random/rng.ts';
import { sdpaBuffered, sdpaCached } from '../../model/ops/sdpa.ts';
import { INFER_OPS } from '../../model/ops/op-set.ts';
import { attentionBias } from '../../model/attention.ts';
import { addonBuilt, randArr, setupNative, toTensor } from '../../../test/native-testkit.ts';
import { initBackend } from '../select.ts';
import { loadTypedAddon } from './addon.ts';
import { NATIVE_BACKEND, registerNativeBackend } from './backend.ts';
import { kvWriteInPlace, kvWriteReady } from './kv-write.ts';

/**
 * The in-place KV write and the attention kernels' reading of a preallocated buffer's first columns,
 * on the wasm heap and on the `native` backend's arrays: exact values, and attention over the buffer
 * equal bit for bit to attention over a cache exactly that wide.
 */
const [N, HD, CAP] = [6, 8, 9]; // B*KV rows (B 3, KV 2), head dim, capacity

function checks(): void {
  it('writes columns in place and leaves the rest', () => {
    expect(kvWriteReady()).toBe(true);
    const rng = new Rng(41);
    const a = randArr(rng, [N, 3, HD]);
    const x = randArr(rng, [N, 2, HD]);
    const buf = tf.tidy(() =>
      tf.pad(toTensor(a) as tf.Tensor3D, [
        [0, 0],
        [0, CAP - 3],
        [0, 0],
      ]),
    ); // [N, CAP, HD]
    const xt = toTensor(x) as tf.Tensor3D;
    kvWriteInPlace(buf, xt, 3);
    const got = buf.arraySync();
    for (let r = 0; r < N; r++)
      for (let c = 0; c < CAP; c++)
        for (let i = 0; i < HD; i++) {
          const want = c < 3 ? a.data[(r * 3 + c) * HD + i] : c < 5 ? x.data[(r * 2 + c - 3) * HD + i] : 0;
          expect(got[r]![c]![i]).toBe(want);
        }
    tf.dispose([buf, xt]);
  });

  it('refuses a write past the capacity or into a shared buffer, in one line', () => {
    const buf = tf.zeros([N, CAP, HD]) as tf.Tensor3D;
    const x = tf.ones([N, 2, HD]) as tf.Tensor3D;
    expect(() => kvWriteInPlace(buf, x, CAP - 1)).toThrow(
      /^kvWriteInPlace: columns \[8, 10\) do not fit a capacity of 9$/,
    );
    const view = tf.reshape(buf, [N * CAP, HD]); // shares buf's data
    expect(() => kvWriteInPlace(buf, x, 0)).toThrow(/shared with another tensor/);
    tf.dispose([buf, x, view]);
  });

  it('attends to a buffer’s first columns exactly as to a cache that wide', () => {
    const rng = new Rng(42);
    for (const [t, len] of [
      [1, 4],
      [3, 7],
    ] as const) {
      const q = toTensor(randArr(rng, [3, t, 4, HD])) as tf.Tensor4D; // [B, T, H, hd]
      const k = toTensor(randArr(rng, [N, len, HD])) as tf.Tensor3D; // [B*KV, Tk, hd]
      const v = toTensor(randArr(rng, [N, len, HD])) as tf.Tensor3D; // [B*KV, Tk, hd]
      const mask = tf.tensor2d(
        [Array(len).fill(1), [0, ...Array(len - 1).fill(1)], Array(len).fill(1)],
        [3, len],
        'float32',
      ); // [B, Tk] the second row padded
      const bias = attentionBias(mask, t, len - t); // [B, 1, T, Tk]
      const room = (x: tf.Tensor3D): tf.Tensor3D =>
        tf.pad(x, [
          [0, 0],
          [0, CAP - len],
          [0, 0],
        ]); // [N, CAP, HD]
      const [kb, vb] = [room(k), room(v)];
      const want = sdpaCached(q, k, v, bias, 0.3, INFER_OPS); // [B, T, H, hd]
      const got = sdpaBuffered(q, kb, vb, len, bias, 0.3); // [B, T, H, hd]
      expect(Array.from(got.dataSync())).toEqual(Array.from(want.dataSync()));
      tf.dispose([q, k, v, mask, bias, kb, vb, want, got]);
    }
  });
}

describe.skipIf(!addonBuilt)('kvWrite on the wasm heap', () => {
  beforeAll(setupNative);
  checks();
});

describe.skipIf(loadTypedAddon().addon === undefined)('kvWrite on the native backend', () => {
  beforeAll(async () => {
    registerNativeBackend();
    await tf.setBackend(NATIVE_BACKEND);
  });
  afterAll(() => initBackend('wasm'));
  checks();
});
