import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { AdamW } from '../optim/adamw.ts';
import { GradientAccumulator } from '../optim/accumulate.ts';
import { dpoUpdate } from './dpo.ts';
import { grpoUpdate } from '../grpo/update.ts';
import type { PairSequences } from '../batches/sequences.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

const HF = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 40 });
const pair = (prompt: number[], chosen: number[], rejected: number[]): PairSequences => ({
  chosen: { ids: [...prompt, ...chosen], trainMask: [...prompt.map(() => 0), ...chosen.map(() => 1)] },
  rejected: { ids: [...prompt, ...rejected], trainMask: [...prompt.map(() => 0), ...rejected.map(() => 1)] },
});
const PAIRS = [pair([1, 2], [10, 11], [12, 13, 14]), pair([1, 3, 4], [20], [21]), pair([1, 5], [30, 31, 32], [33])];

describe('dpoUpdate', () => {
  it('first loss is ln 2 when the reference equals the policy; then the chosen answers win', () => {
    const model = CausalLM.random(HF, 4);
    const ref = CausalLM.random(HF, 4); // same seed: identical weights, frozen
    const optimizer = new AdamW({ lr: 1e-2 });
    const accumulator = new GradientAccumulator(model.trainableVariables());
    const ctx = { model, ref, optimizer, accumulator, lr: 1e-2, padId: 0 };
    const cfg = { beta: 0.5, microBatch: 2, weight: 1, gradClip: 1 };
    const first = dpoUpdate(ctx, PAIRS, cfg);
    // policy == reference: every margin is 0, -log sigmoid(0) = ln 2 = 0.693147
    expect(first['dpo/loss']).toBeCloseTo(Math.LN2, 5);
    expect(first['dpo/rewardMargin']).toBeCloseTo(0, 5);
    expect(first['dpo/pairs']).toBe(3);
    expect(first['dpo/microBatches']).toBe(2);
    let last = first;
    for (let i = 0; i < 8; i++) last = dpoUpdate(ctx, PAIRS, cfg);
    const f = (k: string, r = last): number => r[k] as number;
    console.log(
      `dpo: loss ${f('dpo/loss', first).toFixed(3)} -> ${f('dpo/loss').toFixed(3)}, margin ` +
        `${f('dpo/rewardMargin').toFixed(2)}, accuracy ${f('dpo/accuracy')}`,
    );
    expect(last['dpo/accuracy']).toBe(1);
    expect(last['dpo/rewardMargin']).toBeGreaterThan(1);
    expect(last['dpo/loss']).toBeLessThan(0.3);
    [accumulator, optimizer, model, ref].forEach((x) => x.dispose());
  });

  it('mixes into a GRPO update with a weight (reference: the policy before the update)', () => {
    const model = CausalLM.random(HF, 6);
    const optimizer = new AdamW({ lr: 1e-3 });
    const accumulator = new GradientAccumulator(model.trainableVariables());
    const source = { trajectory: 't', agent: 0, message: 1 };
    const seqs = [
      { ids: [1, 2, 10, 11], trainMask: [0, 0, 1, 1], sampleLogp: [0, 0, 0, 0], adv: 1, source },
      { ids: [1, 2, 12, 13], trainMask: [0, 0, 1, 1], sampleLogp: [0, 0, 0, 0], adv: -1, source },
    ];
    const n = tf.memory().numTensors;
    const stats = grpoUpdate(
      { model, optimizer, accumulator, lr: 1e-3, dpo: { pairs: PAIRS, weight: 0.5, beta: 0.1 } },
      seqs,
      {
        clipLow: 0.2,
        clipHigh: 0.2,
        klBeta: 0,
        aggregation: 'token-mean',
        microBatch: 4,
        epochs: 1,
        gradClip: 1,
        sumNormLength: 0,
        oldLogp: 'recompute',
        logEntropy: false,
      },
    );
    // Reference = policy at the start: DPO loss = 0.5 * ln 2 = 0.3465736; GRPO loss at ratio 1 with
    // A = +-1 over 2 + 2 tokens = -(1 + 1 - 1 - 1) / 4 = 0.
    expect(stats['dpo/loss']).toBeCloseTo(0.5 * Math.LN2, 5);
    expect(stats['losses/policy']).toBeCloseTo(0, 6);
    expect(stats['losses/total']).toBeCloseTo(0.5 * Math.LN2, 5);
    expect(stats['dpo/pairs']).toBe(3);
    expect(tf.memory().numTensors).toBe(n + 2 * model.trainableVariables().length); // only the new AdamW moments remain
    [accumulator, optimizer, model].forEach((x) => x.dispose());
  });
});
