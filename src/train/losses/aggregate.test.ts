import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { aggregate, fullBatchNormalizer } from './aggregate.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

// per-token [[1, 2, 3], [4, 5, 6]], mask [[1, 1, 0], [1, 0, 0]]: row sums 3 and 4, token counts 2 and 1
const perToken = () => tf.tensor2d([[1, 2, 3], [4, 5, 6]]);
const mask = () => tf.tensor2d([[1, 1, 0], [1, 0, 0]]);
const num = (t: tf.Tensor) => t.dataSync()[0] as number;

describe('aggregate', () => {
  it('token-mean: (3 + 4) / 3 = 2.3333333', () => expect(num(aggregate('token-mean', perToken(), mask()))).toBeCloseTo(7 / 3, 6));
  it('seq-mean-token-mean: (3/2 + 4/1) / 2 = 2.75', () => expect(num(aggregate('seq-mean-token-mean', perToken(), mask()))).toBeCloseTo(2.75, 6));
  it('seq-mean-token-sum-norm, maxLen 4: (3/4 + 4/4) / 2 = 0.875', () =>
    expect(num(aggregate('seq-mean-token-sum-norm', perToken(), mask(), { maxLen: 4 }))).toBeCloseTo(0.875, 6));
  it('divides by an explicit full-batch normalizer', () => expect(num(aggregate('token-mean', perToken(), mask(), { normalizer: 7 }))).toBeCloseTo(1, 6));
  it('full-batch normalizers: tokens for token-mean, sequences otherwise', () => {
    expect(fullBatchNormalizer('token-mean', [2, 1, 0])).toBe(3);
    expect(fullBatchNormalizer('seq-mean-token-mean', [2, 1, 0])).toBe(3);
    expect(fullBatchNormalizer('token-mean', [])).toBe(1);
  });
  it('rejects bad options with one line', () => {
    expect(() => aggregate('token-mean', perToken(), mask(), { normalizer: 0 })).toThrow('normalizer must be > 0');
    expect(() => aggregate('nope' as 'token-mean', perToken(), mask())).toThrow("unknown aggregation 'nope'");
  });
});
