import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor, type BuildOptions } from './config.ts';
import { tokenLogprobs, tokenStats } from './logprobs.ts';

const QWEN3: BuildOptions = { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 61, tieEmbeddings: false };
const QWEN2: BuildOptions = { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 61, tieEmbeddings: true };

beforeAll(async () => {
  await initBackend('wasm');
});

const IDS = [
  [0, 0, 5, 8, 13, 21, 34, 55], // left-padded
  [1, 2, 3, 4, 5, 6, 0, 0], // right-padded
];
const MASK = [
  [0, 0, 1, 1, 1, 1, 1, 1],
  [1, 1, 1, 1, 1, 1, 0, 0],
];

describe('tokenLogprobs', () => {
  it('equals log_softmax(forward) gathered at the next token, 0 at padded targets', () => {
    const m = CausalLM.random(hfConfigFor(QWEN3), 1);
    tf.tidy(() => {
      const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
      const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
      const got = tokenLogprobs(m, ids, mask).arraySync(); // [2, 7]
      const ls = tf.logSoftmax(m.forward(ids, mask)).arraySync(); // [2, 8, V]
      for (let b = 0; b < 2; b++) {
        for (let t = 0; t < 7; t++) {
          const want = MASK[b]?.[t + 1] ? (ls[b]?.[t]?.[IDS[b]?.[t + 1] as number] as number) : 0;
          expect(Math.abs((got[b]?.[t] as number) - want)).toBeLessThan(1e-5);
        }
      }
      // Random init is near uniform: log p ~ -ln 61 = -4.11.
      expect(got[0]?.[3]).toBeGreaterThan(-4.5);
      expect(got[0]?.[3]).toBeLessThan(-3.7);
      const ent = tokenStats(m, ids, mask, true).entropy?.arraySync() ?? [];
      expect(ent[0]?.[3]).toBeGreaterThan(4.0); // near ln 61 = 4.11
      expect(ent[0]?.[3]).toBeLessThanOrEqual(Math.log(61) + 1e-4);
    });
    m.dispose();
  });

  for (const o of [QWEN3, QWEN2]) {
    it(`${o.arch}: every trainable variable gets a nonzero gradient`, () => {
      const m = CausalLM.random(hfConfigFor(o), 2);
      tf.tidy(() => {
        const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
        const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
        const { grads } = tf.variableGrads(() => tf.neg(tf.mean(tokenLogprobs(m, ids, mask))) as tf.Scalar, m.trainableVariables());
        for (const v of m.trainableVariables()) {
          const g = grads[v.name];
          expect(g, v.name).toBeDefined();
          expect(g?.shape).toEqual(v.shape);
          expect(tf.max(tf.abs(g as tf.Tensor)).dataSync()[0], v.name).toBeGreaterThan(0);
        }
      });
      m.dispose();
    });
  }
});

describe('training step', () => {
  it('50 Adam steps: tensor count flat, loss on a memorised batch falls by > 2 nats', () => {
    const m = CausalLM.random(hfConfigFor(QWEN3), 3);
    const opt = tf.train.adam(3e-3);
    const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
    const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
    const losses: number[] = [];
    let count = -1;
    for (let step = 0; step < 50; step++) {
      const loss = opt.minimize(() => tf.neg(tf.div(tf.sum(tokenLogprobs(m, ids, mask)), 11)) as tf.Scalar, true, m.trainableVariables()); // 11 real targets
      losses.push(loss?.dataSync()[0] as number);
      loss?.dispose();
      // Adam creates its moment Variables in step 1; from step 2 on the count must not move.
      if (step === 1) count = tf.memory().numTensors;
      if (step > 1) expect(tf.memory().numTensors).toBe(count);
    }
    expect(losses[0]).toBeGreaterThan(3.5); // ~ ln 61
    expect((losses[0] as number) - (losses[49] as number)).toBeGreaterThan(2);
    opt.dispose();
    tf.dispose([ids, mask]);
    m.dispose();
  });
});
