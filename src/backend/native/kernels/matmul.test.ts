import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../../random/rng.ts';
import { planMatMul } from './matmul.ts';
import { matmulRef } from '../../../../test/reference/kernels.ts';
import { addonBuilt, dims, expectClose, randArr, setupNative, toTensor } from '../../../../test/native-testkit.ts';

describe('planMatMul', () => {
  it('broadcasts batch dims and applies transpose flags', () => {
    // a [2,1,5,3]^T -> M=3, K=5; b [4,5,7] -> N=7; batch [2,1] x [4] -> [2,4]
    const p = planMatMul([2, 1, 5, 3], [4, 5, 7], true, false);
    expect(p.outShape).toEqual([2, 4, 3, 7]);
    expect([p.M, p.N, p.K]).toEqual([3, 7, 5]);
    expect(p.aBatch).toEqual([2, 1]);
    expect(p.bBatch).toEqual([1, 4]);
    expect(() => planMatMul([2, 3], [4, 5], false, false)).toThrow(/inner dims 3 and 4/);
  });
});

describe.skipIf(!addonBuilt)('native BatchMatMul vs float64', () => {
  beforeAll(setupNative);

  it('matches on random shapes, all transpose flags, general broadcasting', () => {
    const rng = new Rng(7);
    const batchCases: [number[], number[]][] = [
      [[], []],
      [[3], []], // x[B,T,D] @ W[D,N]: the folded single-GEMM path
      [[], [3]],
      [[4], [4]],
      [
        [2, 1],
        [1, 3],
      ], // mixed broadcast (the stock cpu backend gets this wrong)
      [[2, 3], [3]],
      [
        [1, 2, 1],
        [2, 1, 2],
      ],
    ];
    let cases = 0;
    for (const [ba, bb] of batchCases)
      for (const ta of [false, true])
        for (const tb of [false, true]) {
          const [M, N, K] = dims(rng, 3, 1, 17);
          const a = randArr(rng, [...ba, ...(ta ? [K!, M!] : [M!, K!])]);
          const b = randArr(rng, [...bb, ...(tb ? [N!, K!] : [K!, N!])]);
          const got = tf.tidy(() => tf.matMul(toTensor(a), toTensor(b), ta, tb));
          expectClose(got, matmulRef(a, b, ta, tb));
          got.dispose();
          cases++;
        }
    expect(cases).toBe(28);
  });

  it('handles a bench-sized product and K = 0, and keeps numTensors flat', () => {
    const rng = new Rng(8);
    const a = randArr(rng, [512, 128]);
    const b = randArr(rng, [384, 128]);
    const ta = toTensor(a);
    const tbt = toTensor(b);
    const before = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) tf.tidy(() => tf.matMul(ta, tbt, false, true).dataSync());
    expect(tf.memory().numTensors).toBe(before);
    const got = tf.matMul(ta, tbt, false, true);
    expectClose(got, matmulRef(a, b, false, true));
    const z = tf.matMul(tf.zeros([2, 3, 0]), tf.zeros([2, 0, 4])); // [2,3,4] of zeros
    expect(z.shape).toEqual([2, 3, 4]);
    expect(Array.from(z.dataSync()).every((v) => v === 0)).toBe(true);
    tf.dispose([ta, tbt, got, z]);
  });

  it('matches on a batch of attention-sized products: broadcast, flags, odd batch', () => {
    const rng = new Rng(9);
    // 3 x 5 = 15 output batches of 64 x 48 x 40 multiply-adds each, b broadcast over the first batch dim.
    for (const [ta, tb] of [
      [false, false],
      [true, true],
      [false, true],
    ] as const) {
      const a = randArr(rng, [3, 5, ...(ta ? [40, 64] : [64, 40])]);
      const b = randArr(rng, [1, 5, ...(tb ? [48, 40] : [40, 48])]);
      const got = tf.tidy(() => tf.matMul(toTensor(a), toTensor(b), ta, tb));
      expectClose(got, matmulRef(a, b, ta, tb));
      got.dispose();
    }
  });
});
