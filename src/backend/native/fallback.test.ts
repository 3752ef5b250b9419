import * as tf from '@tensorflow/tfjs';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { Rng } from '../../random/rng.ts';
import { initBackend } from '../select.ts';
import { matmulRef } from '../../../test/reference/kernels.ts';
import { dims, expectClose, randArr, toTensor } from '../../../test/native-testkit.ts';
import { disableNativeKernels, enableFallbackKernels } from './register.ts';

// The pure-wasm split override runs everywhere (no addon needed): it is what a machine without
// OpenBLAS trains with.
describe('pure-wasm BatchMatMul fallback vs float64', () => {
  beforeAll(async () => {
    await initBackend('wasm');
    const s = enableFallbackKernels();
    expect(s.mode).toBe('fallback');
    expect(s.kernels).toEqual(['BatchMatMul']);
  });
  afterAll(() => disableNativeKernels());

  it('matches on random shapes, all transpose flags, general broadcasting', () => {
    const rng = new Rng(41);
    const batchCases: [number[], number[]][] = [
      [[], []],
      [[3], []],
      [[], [3]],
      [[4], [4]],
      [
        [2, 1],
        [1, 3],
      ],
      [
        [1, 2, 1],
        [2, 1, 2],
      ],
    ];
    for (const [ba, bb] of batchCases)
      for (const ta of [false, true])
        for (const tb of [false, true]) {
          const [M, N, K] = dims(rng, 3, 1, 13);
          const a = randArr(rng, [...ba, ...(ta ? [K!, M!] : [M!, K!])]);
          const b = randArr(rng, [...bb, ...(tb ? [N!, K!] : [K!, N!])]);
          const got = tf.tidy(() => tf.matMul(toTensor(a), toTensor(b), ta, tb));
          expectClose(got, matmulRef(a, b, ta, tb));
          got.dispose();
        }
  });

  it('keeps small same-batch products on the stock kernel, still exact', () => {
    const rng = new Rng(43);
    // Decode attention: [G, 1, hd] x [G, hd, T] with hd * T below SPLIT_MIN_MACS.
    const a = randArr(rng, [32, 1, 32]);
    const b = randArr(rng, [32, 32, 20]);
    const got = tf.tidy(() => tf.matMul(toTensor(a), toTensor(b)));
    expectClose(got, matmulRef(a, b, false, false));
    got.dispose();
  });

  it('leaves no tensors and no heap views behind', () => {
    const rng = new Rng(42);
    const a = toTensor(randArr(rng, [4, 16, 8]));
    const b = toTensor(randArr(rng, [4, 16, 8]));
    tf.tidy(() => tf.matMul(a, b, false, true).dataSync());
    const before = tf.memory().numTensors;
    const bytes = tf.memory().numBytes;
    for (let i = 0; i < 5; i++) tf.tidy(() => tf.matMul(a, b, true, false).dataSync());
    expect(tf.memory().numTensors).toBe(before);
    expect(tf.memory().numBytes).toBe(bytes);
    tf.dispose([a, b]);
  });
});
