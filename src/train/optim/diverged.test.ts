import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../errors.ts';
import { GradientAccumulator } from './accumulate.ts';
import { AdamW } from './adamw.ts';
import { clipAndStep } from './clip.ts';
import { atStep, TrainingDivergedError } from './diverged.ts';

describe('a non-finite gradient stops training in one line, before the weights change', () => {
  it('names the step and leaves the variables as they were', async () => {
    await tf.setBackend('cpu');
    const w = tf.variable(tf.tensor1d([1, 2]), true, 'w'); // [2]
    const acc = new GradientAccumulator([w]);
    const opt = new AdamW({ lr: 0.1, weightDecay: 0 });
    // loss = sum(w * NaN): every gradient is NaN, as after a diverged step.
    acc.add(() => ({ loss: tf.sum(tf.mul(w, tf.scalar(Number.NaN))), stats: {} }));
    let err: unknown;
    try {
      atStep(7, 'train: RL', () => clipAndStep(acc, opt, 0.1, 1));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TrainingDivergedError);
    expect(err).toBeInstanceOf(UserError); // exit 2, one line
    expect((err as Error).message).toBe(
      'train: RL step 7: gradient norm is NaN (NaN or Inf in the loss or the gradients); stopped before the update, ' +
        'the last saved checkpoint is intact (try a lower learning rate)',
    );
    expect(Array.from(w.dataSync())).toEqual([1, 2]);
    acc.dispose();
    opt.dispose();
    w.dispose();
  });

  it('passes other errors through unchanged', () => {
    const boom = new Error('boom');
    expect(() =>
      atStep(1, 'sft', () => {
        throw boom;
      }),
    ).toThrow(boom);
  });
});
