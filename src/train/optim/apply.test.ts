import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { GradientAccumulator } from './accumulate.ts';
import { AdamW } from './adamw.ts';
import { applyAccumulated } from './apply.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('applyAccumulated', () => {
  it('clips, sets the lr and takes one AdamW step (hand-computed)', () => {
    const w = tf.variable(tf.tensor1d([1, 1]), true, 'apply_test_w');
    const acc = new GradientAccumulator([w]);
    // loss = 3 w0 + 4 w1: gradient [3, 4], global norm 5
    acc.add(() => ({ loss: tf.sum(tf.mul(w, tf.tensor1d([3, 4]))) as tf.Scalar, stats: {} }));
    acc.finish();
    const opt = new AdamW({ lr: 1 });
    const norm = applyAccumulated(acc, opt, 0.1, 1);
    expect(norm).toBeCloseTo(5, 5);
    expect(opt.learningRate).toBe(0.1);
    // First Adam step moves each weight by lr * sign(g) whatever the clip scale: [0.9, 0.9]
    const v = w.dataSync();
    expect(v[0]).toBeCloseTo(0.9, 5);
    expect(v[1]).toBeCloseTo(0.9, 5);
    acc.dispose();
    opt.dispose();
    w.dispose();
  });
});
