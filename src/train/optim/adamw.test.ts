import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { AdamW } from './adamw.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

const close = (got: ArrayLike<number>, want: number[], digits = 6) =>
  want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, digits));

// lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on p0 = [1, -2], grads g1..g3 below.
// Step 1 by hand: p <- p (1 - 0.001) = [0.999, -1.998]; m = 0.1 g, v = 0.001 g^2, so the bias-corrected
// m/sqrt(v) = g/|g| = sign(g) and p <- p - 0.1 sign(g) = [0.899, -1.898].
// Steps 2 and 3 follow the same formulas (float64 reference, as torch.optim.AdamW):
const grads = [
  [0.5, -1.0],
  [0.1, 0.2],
  [-0.3, 0.0],
];
const want = [
  [0.899, -1.898],
  [0.8177969063826518, -1.8449993939894946],
  [0.7959078148551255, -1.8036519313891808],
];

describe('AdamW', () => {
  it('matches hand-computed steps with decoupled weight decay', () => {
    const p = tf.variable(tf.tensor1d([1, -2]), true, 'adamw_test_p');
    const opt = new AdamW({ lr: 0.1, weightDecay: 0.01, decay: () => true });
    grads.forEach((g, k) => {
      const gt = tf.tensor1d(g);
      opt.applyGradients({ [p.name]: gt });
      gt.dispose();
      close(p.dataSync(), want[k] as number[]);
    });
    expect(opt.step).toBe(3);
    opt.dispose();
    p.dispose();
  });

  it('refuses a step without a rate instead of taking a step of size 0', () => {
    const p = tf.variable(tf.tensor1d([1, -2]), true, 'adamw_test_norate');
    const opt = new AdamW({ weightDecay: 0.01 });
    const g = tf.tensor1d([0.5, -1]);
    expect(() => opt.applyGradients({ [p.name]: g })).toThrow(/AdamW: a step without a learning rate/);
    expect(opt.step).toBe(0);
    // With the step's rate it moves: p - 0.1 sign(g) on the first step (a rank-1 variable is not decayed by default).
    opt.applyGradients({ [p.name]: g }, 0.1);
    close(p.dataSync(), [0.9, -1.9]);
    g.dispose();
    opt.dispose();
    p.dispose();
  });

  it('decays only rank >= 2 variables by default', () => {
    const bias = tf.variable(tf.tensor1d([1]), true, 'adamw_test_bias');
    const w = tf.variable(tf.tensor2d([[1]]), true, 'adamw_test_w');
    const opt = new AdamW({ lr: 0.1, weightDecay: 0.5 });
    const zero = { [bias.name]: tf.zeros([1]), [w.name]: tf.zeros([1, 1]) };
    opt.applyGradients(zero);
    // zero gradient: the Adam step is 0 / (0 + eps) = 0, so only decay moves w: 1 * (1 - 0.1 * 0.5) = 0.95
    expect(bias.dataSync()[0]).toBeCloseTo(1, 7);
    expect(w.dataSync()[0]).toBeCloseTo(0.95, 7);
    tf.dispose([bias, w, ...Object.values(zero)]);
    opt.dispose();
  });

  it('exports and imports its state: a restored optimizer continues exactly', async () => {
    const p = tf.variable(tf.tensor1d([1, -2]), true, 'adamw_test_resume');
    const a = new AdamW({ lr: 0.1, weightDecay: 0.01, decay: () => true });
    const apply = (opt: AdamW, g: number[]) => tf.tidy(() => opt.applyGradients({ [p.name]: tf.tensor1d(g) }));
    apply(a, grads[0]);
    const state = await a.exportState();
    expect([...state.keys()]).toEqual(['step', 'adamw_test_resume.exp_avg', 'adamw_test_resume.exp_avg_sq']);
    close(state.get('adamw_test_resume.exp_avg')?.data ?? [], [0.05, -0.1]);
    a.dispose();

    const b = new AdamW({ lr: 0.1, weightDecay: 0.01, decay: () => true });
    const before = tf.memory().numTensors;
    b.importState(state);
    expect(tf.memory().numTensors).toBe(before + 2); // exactly the two moment Variables
    expect(b.step).toBe(1);
    apply(b, grads[1]);
    apply(b, grads[2]);
    close(p.dataSync(), want[2] as number[]);
    b.dispose();
    p.dispose();
  });

  it('rejects state that does not fit the variables, naming the entry', () => {
    const p = tf.variable(tf.tensor1d([1, 2]), true, 'adamw_test_bad');
    const opt = new AdamW({ lr: 0.1 });
    const arr = (n: number) => ({ shape: [n], data: new Float32Array(n) });
    expect(() => opt.importState(new Map([['adamw_test_bad.exp_avg', arr(2)]]))).toThrow(
      "missing or invalid 'step' entry",
    );
    expect(() =>
      opt.importState(
        new Map([
          ['step', { shape: [1], data: Float32Array.of(3) }],
          ['adamw_test_bad.exp_avg', arr(3)],
          ['adamw_test_bad.exp_avg_sq', arr(2)],
        ]),
      ),
    ).toThrow("'adamw_test_bad.exp_avg' has 3 values, variable 'adamw_test_bad' has 2");
    expect(() =>
      opt.importState(
        new Map([
          ['step', { shape: [1], data: Float32Array.of(3) }],
          ['nope.exp_avg', arr(2)],
        ]),
      ),
    ).toThrow("no registered variable named 'nope'");
    opt.dispose();
    p.dispose();
  });

  it('keeps the tensor count flat across steps', () => {
    const p = tf.variable(tf.randomNormal([4, 4], 0, 1, 'float32', 1), true, 'adamw_test_flat');
    const opt = new AdamW({ lr: 0.01, weightDecay: 0.1 });
    const step = () => tf.tidy(() => opt.applyGradients({ [p.name]: tf.onesLike(p) }));
    step();
    const n = tf.memory().numTensors;
    for (let i = 0; i < 10; i++) step();
    expect(tf.memory().numTensors).toBe(n);
    opt.dispose();
    p.dispose();
  });
});
