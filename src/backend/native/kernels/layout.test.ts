import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../../random/rng.ts';
import { concatRef, gatherRef, segmentSumRef, sliceRef, transposeRef } from '../../../../test/reference/kernels.ts';
import { addonBuilt, dims, expectClose, randArr, setupNative, toTensor } from '../../../../test/native-testkit.ts';

describe.skipIf(!addonBuilt)('native layout kernels vs float64', () => {
  beforeAll(setupNative);

  it('Transpose on random shapes and permutations (ranks 2-6)', () => {
    const rng = new Rng(21);
    const perms = [
      [1, 0],
      [0, 2, 1],
      [2, 0, 1],
      [1, 2, 0],
      [0, 2, 1, 3],
      [3, 2, 1, 0],
      [0, 1, 3, 2],
      [4, 0, 3, 1, 2],
      [0, 2, 4, 1, 5, 3],
    ];
    for (const perm of perms) {
      const shape = dims(rng, perm.length, 1, perm.length > 4 ? 4 : 19);
      const x = randArr(rng, shape);
      const got = tf.tidy(() => tf.transpose(toTensor(x), perm));
      expectClose(got, transposeRef(x, perm), 0);
      got.dispose();
    }
    // The attention head split of the bench model, and a 2-D tile-path transpose.
    for (const [shape, perm] of [
      [
        [8, 64, 4, 32],
        [0, 2, 1, 3],
      ],
      [
        [40, 33],
        [1, 0],
      ],
    ] as [number[], number[]][]) {
      const x = randArr(rng, shape);
      const got = tf.tidy(() => tf.transpose(toTensor(x), perm));
      expectClose(got, transposeRef(x, perm), 0);
      got.dispose();
    }
  });

  it('Slice, SplitV and Concat (exact copies)', () => {
    const rng = new Rng(22);
    for (let t = 0; t < 12; t++) {
      const rank = rng.int(1, 5);
      const shape = dims(rng, rank, 1, 7);
      const begin = shape.map((d) => rng.int(0, d - 1));
      const size = shape.map((d, i) => rng.int(1, d - begin[i]!));
      const x = randArr(rng, shape);
      const got = tf.tidy(() => tf.slice(toTensor(x), begin, size));
      expectClose(got, sliceRef(x, begin, size), 0);
      got.dispose();
      const axis = rng.int(0, rank - 1);
      const parts = [
        randArr(rng, shape),
        randArr(
          rng,
          shape.map((d, i) => (i === axis ? d + 2 : d)),
        ),
      ];
      const cat = tf.tidy(() => tf.concat(parts.map(toTensor), axis));
      expectClose(cat, concatRef(parts, axis), 0);
      const xs = tf.tidy(() => tf.split(cat, [shape[axis]!, shape[axis]! + 2], axis));
      expectClose(xs[0]!, parts[0]!, 0);
      expectClose(xs[1]!, parts[1]!, 0);
      tf.dispose([cat, ...xs]);
    }
  });

  it('Cast between float32, int32 and bool', () => {
    const f = tf.tensor1d([1.7, -1.7, 0, -0.2, 3e9, NaN, 2.5]);
    const fi = tf.cast(f, 'int32');
    // JS ToInt32 (the stock kernel's Int32Array.set): truncate toward zero, wrap 3e9, NaN -> 0.
    expect(Array.from(fi.dataSync())).toEqual([1, -1, 0, 0, 3e9 | 0, 0, 2]);
    const fb = tf.cast(f, 'bool');
    expect(Array.from(fb.dataSync())).toEqual([1, 1, 0, 1, 1, 1, 1]);
    const i = tf.tensor1d([5, -3, 0], 'int32');
    expect(Array.from(tf.cast(i, 'float32').dataSync())).toEqual([5, -3, 0]);
    expect(Array.from(tf.cast(i, 'bool').dataSync())).toEqual([1, 1, 0]);
    const b = tf.tensor1d([1, 0, 1], 'bool');
    expect(Array.from(tf.cast(b, 'float32').dataSync())).toEqual([1, 0, 1]);
    expect(Array.from(tf.cast(b, 'int32').dataSync())).toEqual([1, 0, 1]);
    const same = tf.cast(f, 'float32');
    expect(Array.from(same.dataSync()).slice(0, 2)).toEqual([Math.fround(1.7), Math.fround(-1.7)]);
    tf.dispose([f, fi, fb, i, b, same]);
  });

  it('Transpose of int32 data keeps the bits (no float path)', () => {
    const vals = [2147483647, -2147483648, 2139095041, 1, 0, -1]; // 2139095041 is a signalling-NaN bit pattern
    const t = tf.transpose(tf.tensor2d(vals, [2, 3], 'int32'));
    expect(Array.from(t.dataSync())).toEqual([2147483647, 1, -2147483648, 0, 2139095041, -1]);
    t.dispose();
  });

  it('Pack (tf.stack) on every axis', () => {
    const rng = new Rng(24);
    const xs = [randArr(rng, [3, 4]), randArr(rng, [3, 4]), randArr(rng, [3, 4])];
    for (const axis of [0, 1, 2, -1]) {
      const got = tf.tidy(() => tf.stack(xs.map(toTensor), axis));
      const a = axis < 0 ? 2 : axis;
      const expanded = xs.map((x) => ({ data: x.data, shape: [...x.shape.slice(0, a), 1, ...x.shape.slice(a)] }));
      expectClose(got, concatRef(expanded, a), 0);
      got.dispose();
    }
    const ints = tf.tidy(() => tf.stack([tf.tensor1d([1, 2], 'int32'), tf.tensor1d([3, 4], 'int32')], 1));
    expect(ints.dtype).toBe('int32');
    expect(Array.from(ints.dataSync())).toEqual([1, 3, 2, 4]);
    ints.dispose();
  });

  it('GatherV2 on any axis, its gradient UnsortedSegmentSum, and OneHot', () => {
    const rng = new Rng(23);
    const x = randArr(rng, [5, 11, 3]);
    for (const axis of [0, 1, 2]) {
      const ids = Array.from({ length: 7 }, () => rng.int(0, x.shape[axis]! - 1));
      const got = tf.tidy(() => tf.gather(toTensor(x), tf.tensor1d(ids, 'int32'), axis));
      expectClose(got, gatherRef(x, ids, [7], axis), 0);
      got.dispose();
    }
    expect(() => tf.tidy(() => tf.gather(toTensor(x), tf.tensor1d([0, 5], 'int32'), 0))).toThrow(
      /GatherV2: index 5 .* outside \[0, 5\)/,
    );
    const data = randArr(rng, [9, 4]);
    const seg = [0, 2, 2, 5, 1, 0, 7, 2, 3]; // 7 is out of range for 6 segments: dropped
    const ss = tf.tidy(() => tf.unsortedSegmentSum(toTensor(data), tf.tensor1d(seg, 'int32'), 6));
    expectClose(ss, segmentSumRef(data, seg, 6));
    // d/dx sum(gather(x, ids) * w) = segmentSum(w, ids): the embedding gradient path.
    const w = randArr(rng, [4, 3]);
    const ids = [1, 3, 1, 0];
    const g = tf.tidy(() =>
      tf.grad((p: tf.Tensor) => tf.sum(tf.mul(tf.gather(p, tf.tensor1d(ids, 'int32')), toTensor(w))))(tf.zeros([5, 3])),
    );
    expectClose(g, segmentSumRef(w, ids, 5));
    const oh = tf.tidy(() =>
      tf.oneHot(
        tf.tensor2d(
          [
            [0, 3],
            [2, 9],
          ],
          [2, 2],
          'int32',
        ),
        4,
        2,
        -1,
      ),
    );
    expect(oh.shape).toEqual([2, 2, 4]);
    // index 9 >= depth: an all-off row (tf.oneHot semantics)
    expect(Array.from(oh.dataSync())).toEqual([2, -1, -1, -1, -1, -1, -1, 2, -1, -1, 2, -1, -1, -1, -1, -1]);
    const ohi = tf.tidy(() => tf.oneHot(tf.tensor1d([1, 0], 'int32'), 3)); // tfjs default dtype int32
    expect(ohi.dtype).toBe('int32');
    expect(Array.from(ohi.dataSync())).toEqual([0, 1, 0, 1, 0, 0]);
    tf.dispose([ss, g, oh, ohi]);
  });
});
