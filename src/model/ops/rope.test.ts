import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { rmsNorm } from './norm.ts';
import { applyRope, inverseFrequencies, ropeTables } from './rope.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('rope (rotate_half)', () => {
  it('hand-computed: hd=4, theta=100, pos=1: pairs (0,2) rotate by 1 rad, (1,3) by 0.1 rad', () => {
    // inv_freq = [1, 100^-0.5 = 0.1]; x = [1, 0, 0, 1]: out[0] = cos1, out[2] = sin1, out[1] = -sin0.1, out[3] =
    // cos0.1.
    expect(Array.from(inverseFrequencies(4, { type: 'default', theta: 100 }))).toEqual([1, Math.fround(0.1)]);
    const r = ropeTables(tf.tensor2d([1], [1, 1]), 4, { type: 'default', theta: 100 });
    const out = applyRope(tf.tensor4d([1, 0, 0, 1], [1, 1, 1, 4]), r).dataSync();
    expect(out[0]).toBeCloseTo(Math.cos(1), 6);
    expect(out[2]).toBeCloseTo(Math.sin(1), 6);
    expect(out[1]).toBeCloseTo(-Math.sin(0.1), 6);
    expect(out[3]).toBeCloseTo(Math.cos(0.1), 6);
  });

  it('position 0 is the identity', () => {
    const x = tf.tensor4d([1, 2, 3, 4, 5, 6, 7, 8], [1, 1, 2, 4]);
    const out = applyRope(x, ropeTables(tf.tensor2d([0], [1, 1]), 4, { type: 'default', theta: 10000 }));
    expect(Array.from(out.dataSync())).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
});

describe('rmsNorm', () => {
  it('hand-computed: [3, 4] with gain [1, 2] -> [3, 8] / sqrt(12.5)', () => {
    const y = rmsNorm(tf.tensor2d([3, 4], [1, 2]), tf.tensor1d([1, 2]), 0).dataSync();
    expect(y[0]).toBeCloseTo(3 / Math.sqrt(12.5), 6);
    expect(y[1]).toBeCloseTo(8 / Math.sqrt(12.5), 6);
  });
});
