import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { dpoLoss, sequenceLogp } from './dpo-loss.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

const num = (t: tf.Tensor): number => t.dataSync()[0] as number;

describe('dpoLoss (hand-computed, beta 0.1)', () => {
  // pair 1: (lp+ - ref+) = -5 + 6 = 1, (lp- - ref-) = -7 + 6 = -1 -> z = 0.1 * 2 = 0.2
  //   -log sigmoid(0.2) = log(1 + e^-0.2) = 0.5981389
  // pair 2: (-4 + 3.5) = -0.5, (-4 + 5) = 1 -> z = 0.1 * -1.5 = -0.15
  //   -log sigmoid(-0.15) = log(1 + e^0.15) = 0.7709570
  // mean 0.6845480; rewards chosen [0.1, -0.05] mean 0.025, rejected [-0.1, 0.1] mean 0,
  // margin [0.2, -0.15] mean 0.025, accuracy 1/2.
  const inputs = () => ({
    chosen: tf.tensor1d([-5, -4]),
    rejected: tf.tensor1d([-7, -4]),
    refChosen: tf.tensor1d([-6, -3.5]),
    refRejected: tf.tensor1d([-6, -5]),
  });

  it('gives the loss and stats', () => {
    const { loss, stats } = dpoLoss(inputs(), { beta: 0.1 });
    expect(num(loss)).toBeCloseTo(0.684548, 5);
    expect(num(stats['dpo/rewardChosen'])).toBeCloseTo(0.025, 6);
    expect(num(stats['dpo/rewardRejected'])).toBeCloseTo(0, 6);
    expect(num(stats['dpo/rewardMargin'])).toBeCloseTo(0.025, 6);
    expect(num(stats['dpo/accuracy'])).toBe(0.5);
    expect(num(stats['dpo/pairs'])).toBe(2);
  });

  it('has the analytic gradient d/d lp+ = -beta * sigmoid(-z) / N', () => {
    const chosen = tf.variable(tf.tensor1d([-5, -4]));
    const i = inputs();
    const { grads } = tf.variableGrads(() => dpoLoss({ ...i, chosen }, { beta: 0.1 }).loss, [chosen]);
    // sigmoid(-0.2) = 0.4501660, sigmoid(0.15) = 0.5374298 -> -0.1 * [0.450166, 0.5374298] / 2
    const g = grads[chosen.name].dataSync();
    expect(g[0]).toBeCloseTo(-0.0225083, 6);
    expect(g[1]).toBeCloseTo(-0.0268715, 6);
  });

  it('rejects mismatched lengths', () => {
    expect(() => dpoLoss({ ...inputs(), refRejected: tf.tensor1d([1, 2, 3]) }, { beta: 0.1 })).toThrow(
      'dpoLoss: refRejected has shape [3], expected [2]',
    );
  });
});

describe('sequenceLogp', () => {
  it('sums the masked token log-probs', () => {
    const s = sequenceLogp(
      tf.tensor2d([
        [-1, -2, -3],
        [-0.5, -0.5, -9],
      ]),
      tf.tensor2d([
        [0, 1, 1],
        [1, 1, 0],
      ]),
    );
    expect(Array.from(s.dataSync())).toEqual([-5, -1]);
  });
});
