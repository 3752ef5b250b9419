import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { sftLoss } from './sft-loss.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

const num = (t: tf.Tensor): number => t.dataSync()[0] as number;

describe('sftLoss (hand-computed)', () => {
  const logp = () =>
    tf.tensor2d([
      [-1, -2],
      [-3, -4],
    ]);
  const mask = () =>
    tf.tensor2d([
      [1, 1],
      [1, 0],
    ]);

  it('is the masked mean NLL: (1 + 2 + 3) / 3 = 2', () => {
    const { loss, stats } = sftLoss(logp(), mask());
    expect(num(loss)).toBeCloseTo(2, 6);
    expect(num(stats.nll)).toBeCloseTo(2, 6);
    expect(num(stats.tokens)).toBe(3);
  });

  it('divides by the full-batch normalizer when micro-batching: 6 / 4 = 1.5', () => {
    const { loss, stats } = sftLoss(logp(), mask(), { normalizer: 4 });
    expect(num(loss)).toBeCloseTo(1.5, 6);
    expect(num(stats.nll)).toBeCloseTo(2, 6); // the stat stays this batch's mean
  });

  it('weights a token by its mask value and still divides by the trained-token count: (1 + 2*3 + 3) / 3', () => {
    const { loss, stats } = sftLoss(
      logp(),
      tf.tensor2d([
        [1, 3],
        [1, 0],
      ]),
    );
    expect(num(loss)).toBeCloseTo(10 / 3, 6);
    expect(num(stats.tokens)).toBe(3);
  });

  it('rejects a mask of another shape', () => {
    expect(() => sftLoss(logp(), tf.ones([2, 3]) as tf.Tensor2D)).toThrow(
      'sftLoss: mask has shape [2, 3], expected [2, 2]',
    );
  });
});
