import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { GradientAccumulator } from './accumulate.ts';
import { fullBatchNormalizer, grpoLoss, grpoMetrics } from '../losses/grpo-loss.ts';
import { AdamW } from './adamw.ts';
import { clipByGlobalNorm } from './clip.ts';
import { Rng } from '../../random/rng.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

// A tiny linear policy: logits = x W, x [B*T, D] fixed features, W [D, V] trained.
const B = 4;
const T = 3;
const D = 5;
const V = 6;
const rng = new Rng(7);
const x = () =>
  tf.tensor2d(
    Array.from({ length: B * T * D }, () => rng.float() - 0.5),
    [B * T, D],
  );
const chosen = Array.from({ length: B * T }, () => rng.int(0, V - 1));
const maskRows = [
  [1, 1, 1],
  [1, 1, 0],
  [1, 0, 0],
  [0, 1, 1],
];
const advs = [1.5, -0.5, 0.8, -1.2];

function rows(t: tf.Tensor2D, from: number, n: number): tf.Tensor2D {
  return tf.slice(t, [from * T, 0], [n * T, -1]);
}

describe('GradientAccumulator', () => {
  const feats = x();
  const W = tf.variable(
    tf.tensor2d(
      Array.from({ length: D * V }, (_, k) => Math.cos(k) * 0.3),
      [D, V],
    ),
    true,
    'acc_test_W',
  );
  const logpOf = (f: tf.Tensor2D, ids: number[], n: number): tf.Tensor2D =>
    // [n, T]
    tf.reshape(tf.sum(tf.mul(tf.logSoftmax(tf.matMul(f, W)), tf.oneHot(tf.tensor1d(ids, 'int32'), V)), 1), [n, T]);
  const old = tf.tidy(() => tf.sub(logpOf(feats, chosen, B), 0.1)); // [B, T]: ratio e^0.1 everywhere

  const microLoss = (from: number, n: number, normalizer?: number) => () =>
    grpoLoss(
      {
        logp: logpOf(rows(feats, from, n), chosen.slice(from * T, (from + n) * T), n),
        oldLogp: tf.slice(old, [from, 0], [n, -1]) as tf.Tensor2D,
        adv: tf.tensor1d(advs.slice(from, from + n)),
        mask: tf.tensor2d(maskRows.slice(from, from + n)),
      },
      { clipLow: 0.2, clipHigh: 0.2, beta: 0, aggregation: 'token-mean', normalizer },
    );

  it('two micro-batches of 2 give the gradient, loss and stats of one batch of 4', () => {
    const full = new GradientAccumulator([W]);
    full.add(microLoss(0, B));
    const fullStep = full.finish();
    const gFull = Array.from(full.grads()[W.name].dataSync());

    const micro = new GradientAccumulator([W]);
    const normalizer = fullBatchNormalizer(
      'token-mean',
      maskRows.map((r) => r.reduce((s, m) => s + m, 0)),
    );
    expect(normalizer).toBe(8); // 3 + 2 + 1 + 2 masked tokens
    micro.add(microLoss(0, 2, normalizer));
    micro.add(microLoss(2, 2, normalizer));
    const microStep = micro.finish();
    const gMicro = Array.from(micro.grads()[W.name].dataSync());

    expect(microStep.microBatches).toBe(2);
    expect(microStep.loss).toBeCloseTo(fullStep.loss, 6);
    gFull.forEach((g, i) => expect(gMicro[i]).toBeCloseTo(g, 6));
    expect(Math.max(...gFull.map(Math.abs))).toBeGreaterThan(1e-3);
    const merged = grpoMetrics(microStep.stats);
    expect(merged['batch/tokens']).toBe(8);
    expect(merged['losses/approx_kl']).toBeCloseTo(fullStep.stats[0]?.['losses/approx_kl'] as number, 6);
    // ratio = e^0.1 = 1.1051709 on every token
    expect(merged['losses/ratio_max']).toBeCloseTo(1.1051709, 5);

    micro.reset();
    expect(Math.max(...Array.from(micro.grads()[W.name].dataSync()).map(Math.abs))).toBe(0);
    full.dispose();
    micro.dispose();
  });

  it('keeps tf.memory().numTensors flat over 20 full update steps (accumulate, clip, AdamW)', () => {
    const acc = new GradientAccumulator([W]);
    const opt = new AdamW({ lr: 1e-2, weightDecay: 0.01 });
    const normalizer = 8;
    const step = () => {
      acc.reset();
      acc.add(microLoss(0, 2, normalizer));
      acc.add(microLoss(2, 2, normalizer));
      const { loss } = acc.finish();
      const { grads } = clipByGlobalNorm(acc.grads(), 1);
      opt.applyGradients(grads);
      tf.dispose(grads);
      return loss;
    };
    const first = step(); // allocates the optimizer moments
    const n = tf.memory().numTensors;
    let last = first;
    for (let i = 0; i < 20; i++) last = step();
    expect(tf.memory().numTensors).toBe(n);
    // The policy improves the surrogate: the loss goes down from the first step.
    expect(last).toBeLessThan(first);
    acc.dispose();
    opt.dispose();
  });

  it('frees everything it allocated on dispose', () => {
    const before = tf.memory().numTensors;
    const acc = new GradientAccumulator([W]);
    expect(tf.memory().numTensors).toBe(before + 1); // one gradient buffer per variable
    acc.add(microLoss(0, 2));
    acc.dispose(); // also drops the unread loss and stats
    expect(tf.memory().numTensors).toBe(before);
  });

  it('rejects duplicate variable names', () => {
    expect(() => new GradientAccumulator([W, W])).toThrow("variable name 'acc_test_W' appears twice");
  });
});
