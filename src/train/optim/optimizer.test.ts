import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { disableNativeKernels, enableNativeKernels } from '../../backend/native/index.ts';
import { configSchema } from '../../config/schema.ts';
import { createAdamW, fusedAdamWAvailable, learningRateAt, optimizerSettings } from './optimizer.ts';

beforeAll(async () => {
  await initBackend('wasm');
});
afterAll(() => disableNativeKernels());

const train = configSchema.parse({
  train: {
    lr: 3e-4,
    steps: 40,
    schedule: 'cosine',
    warmupSteps: 4,
    minLrRatio: 0.1,
    beta1: 0.8,
    beta2: 0.95,
    adamEps: 1e-6,
    weightDecay: 0.05,
    sft: { lr: 2e-3, steps: 10, schedule: 'cosine', warmupSteps: 2 },
    dpo: { lr: 5e-6, steps: 7 },
  },
}).train;

describe('optimizerSettings: one reading of the config for every trainer', () => {
  it('shares betas, eps, weight decay and the cosine floor; each phase has its own lr and schedule', () => {
    const adam = { beta1: 0.8, beta2: 0.95, eps: 1e-6, weightDecay: 0.05, minLrRatio: 0.1 };
    expect(optimizerSettings(train, 'grpo')).toEqual({
      ...adam,
      lr: 3e-4,
      schedule: 'cosine',
      warmupSteps: 4,
      totalSteps: 40,
    });
    expect(optimizerSettings(train, 'sft')).toEqual({
      ...adam,
      lr: 2e-3,
      schedule: 'cosine',
      warmupSteps: 2,
      totalSteps: 10,
    });
    expect(optimizerSettings(train, 'dpo')).toEqual({
      ...adam,
      lr: 5e-6,
      schedule: 'constant',
      warmupSteps: 0,
      totalSteps: 7,
    });
  });
});

describe('learningRateAt', () => {
  it('warms up linearly to the peak at step warmup - 1', () => {
    const o = { schedule: 'constant' as const, lr: 1e-3, warmupSteps: 4, totalSteps: 100, minLrRatio: 0 };
    // (step + 1) / 4 * 1e-3
    expect([0, 1, 2, 3, 4, 50].map((s) => learningRateAt(s, o))).toEqual([2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3, 1e-3]);
  });

  it('decays with a cosine to minLr at totalSteps and stays there', () => {
    const o = { schedule: 'cosine' as const, lr: 1, warmupSteps: 2, totalSteps: 10, minLrRatio: 0.1 };
    expect(learningRateAt(2, o)).toBeCloseTo(1, 12); // p = 0
    // p = (6 - 2) / 8 = 0.5: 0.1 + 0.9 * (1 + cos(pi/2)) / 2 = 0.55
    expect(learningRateAt(6, o)).toBeCloseTo(0.55, 12);
    // p = 2/8 = 0.25: 0.1 + 0.9 * (1 + 0.7071068) / 2 = 0.8681981
    expect(learningRateAt(4, o)).toBeCloseTo(0.8681981, 6);
    expect(learningRateAt(10, o)).toBeCloseTo(0.1, 12);
    expect(learningRateAt(15, o)).toBeCloseTo(0.1, 12);
  });

  it('gives every step of a phase its rate from the config', () => {
    // warmup 2: step 0 at half the peak, step 1 at the peak; then cosine from the peak to 0.1 x peak at step 10
    const sft = optimizerSettings(train, 'sft');
    expect(learningRateAt(0, sft)).toBeCloseTo(1e-3, 12);
    expect(learningRateAt(1, sft)).toBeCloseTo(2e-3, 12);
    expect(learningRateAt(10, sft)).toBeCloseTo(2e-4, 12);
  });

  it('rejects a negative step', () => {
    expect(() =>
      learningRateAt(-1, { schedule: 'constant', lr: 1, warmupSteps: 0, totalSteps: 1, minLrRatio: 0 }),
    ).toThrow('non-negative integer');
  });
});

describe('createAdamW', () => {
  it('gives AdamW the betas, eps and decay of the config', () => {
    const adamw = createAdamW({ ...optimizerSettings(train, 'sft'), fused: false });
    expect([adamw.beta1, adamw.beta2, adamw.eps, adamw.weightDecay, adamw.fused]).toEqual([
      0.8,
      0.95,
      1e-6,
      0.05,
      false,
    ]);
    adamw.dispose();
  });

  it('defaults to the fused native step exactly when the native kernels are loaded on wasm, with the same update', () => {
    disableNativeKernels();
    expect(fusedAdamWAvailable()).toBe(false);
    const defaults = optimizerSettings(configSchema.parse({}).train, 'grpo'); // Adam's usual constants, no decay
    const plain = createAdamW(defaults);
    expect(plain.fused).toBe(false);
    const native = enableNativeKernels().mode === 'native';
    const fused = createAdamW({ ...defaults, weightDecay: 0.1 });
    expect(fused.fused).toBe(native);
    const ops = createAdamW({ ...defaults, weightDecay: 0.1, fused: false });
    const a = tf.variable(
      tf.tensor2d([
        [0.5, -1],
        [2, 0.25],
      ]),
      true,
      'opt-test-a',
    ); // [2, 2]
    const b = tf.variable(
      tf.tensor2d([
        [0.5, -1],
        [2, 0.25],
      ]),
      true,
      'opt-test-b',
    ); // [2, 2]
    for (const g of [
      [
        [1, -2],
        [0.5, 3],
      ],
      [
        [-1, 1],
        [2, -0.5],
      ],
    ]) {
      fused.applyGradients({ 'opt-test-a': tf.tensor2d(g) }, 1e-2);
      ops.applyGradients({ 'opt-test-b': tf.tensor2d(g) }, 1e-2);
    }
    // step 1 moves every weight by lr against its gradient's sign, step 2 by lr again (Adam's bias
    // correction), plus decay: hand-computed from [[0.5,-1],[2,0.25]] for the first entry:
    // 0.5 (1 - 1e-3) - 1e-2 = 0.4895, then 0.4895 (1 - 1e-3) - 1e-2 * (m2 / sqrt(v2)) with g = 1, -1
    const w = a.arraySync() as number[][];
    expect(Math.max(...(tf.abs(tf.sub(a, b)).dataSync() as Float32Array))).toBeLessThan(1e-6);
    const m2 = (0.9 * 0.1 * 1 + 0.1 * -1) / (1 - 0.81);
    const v2 = (0.999 * 0.001 * 1 + 0.001 * 1) / (1 - 0.999 ** 2);
    expect(w[0]![0]!).toBeCloseTo(0.4895 * (1 - 1e-3) - 1e-2 * (m2 / (Math.sqrt(v2) + 1e-8)), 6);
    for (const o of [plain, fused, ops]) o.dispose();
    tf.dispose([a, b]);
  });
});
