import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { tokenStats } from '../../model/logprobs.ts';
import { Rng } from '../../random/rng.ts';
import { disposeBatch, microBatchOrder, padBatch, trainedTokens } from '../batches/batch.ts';
import type { RlSequence } from '../batches/sequences.ts';
import { fullBatchNormalizer, grpoLoss, stopGradient } from '../losses/grpo-loss.ts';
import { GradientAccumulator } from '../optim/accumulate.ts';
import { AdamW } from '../optim/adamw.ts';
import { clipAndStep } from '../optim/clip.ts';
import { testBackend } from '../../../test/backend.ts';
import { advantageTensor, grpoUpdate, type GrpoUpdateConfig } from './update.ts';

beforeAll(async () => {
  await initBackend(testBackend());
});

const VOCAB = 53;
const CFG: GrpoUpdateConfig = {
  clipLow: 0.2,
  clipHigh: 0.28,
  klBeta: 0,
  aggregation: 'token-mean',
  microBatch: 3,
  epochs: 1,
  gradClip: 1,
  sumNormLength: 0,
  oldLogp: 'recompute',
  logEntropy: true,
};

/** Agent-like sequences: trained spans spread between untrained ones, of unequal lengths (micro-batches pad). */
function sequences(): RlSequence[] {
  const rng = new Rng(4);
  return Array.from({ length: 7 }, (_, i) => {
    const n = 9 + ((i * 5) % 8);
    const ids = Array.from({ length: n }, () => Math.floor(rng.float() * VOCAB));
    const trainMask = ids.map((_, j) => (j > 0 && (j % 5 === 2 || j % 5 === 3 || j === n - 1) ? 1 : 0));
    return {
      ids,
      trainMask,
      sampleLogp: ids.map(() => 0),
      adv: i % 2 === 0 ? 1 - i / 10 : -0.7,
      source: { trajectory: `t${i}`, agent: 0, message: 1 },
    };
  });
}

/** grpoUpdate's epoch with the head on every position (the path before it gathered the trained rows). */
function updateAllPositions(
  model: CausalLM,
  seqs: RlSequence[],
  cfg: GrpoUpdateConfig,
): { loss: number; norm: number } {
  const optimizer = new AdamW({ lr: 1e-2 });
  const accumulator = new GradientAccumulator(model.trainableVariables());
  const normalizer = fullBatchNormalizer(cfg.aggregation, seqs.map(trainedTokens));
  for (const idx of microBatchOrder(
    seqs.map((s) => s.ids.length),
    cfg.microBatch,
  )) {
    const part = idx.map((i) => seqs[i] as RlSequence);
    const batch = padBatch(part, 0);
    const adv = advantageTensor(part);
    accumulator.add(() => {
      const ts = tokenStats(model, batch.ids, batch.attn, true); // [b, L-1]
      return grpoLoss(
        { logp: ts.logprobs, oldLogp: stopGradient(ts.logprobs), adv, mask: batch.mask, entropy: ts.entropy },
        { clipLow: cfg.clipLow, clipHigh: cfg.clipHigh, beta: 0, aggregation: cfg.aggregation, normalizer, maxLen: 1 },
      );
    });
    adv.dispose();
    disposeBatch(batch);
  }
  const step = accumulator.finish();
  const norm = clipAndStep(accumulator, optimizer, 1e-2, cfg.gradClip);
  accumulator.dispose();
  optimizer.dispose();
  return { loss: step.loss, norm };
}

const snapshot = (m: CausalLM) =>
  new Map([...m.namedVariables()].map(([n, v]) => [n, Float32Array.from(v.dataSync())]));

describe('grpoUpdate runs the head at trained positions only', () => {
  for (const lora of [false, true]) {
    it(
      `${lora ? 'LoRA' : 'full model'}, padded micro-batches, logprobChunk 4: the same loss, gradient norm and ` +
        `step as the head on every position`,
      () => {
        const hf = hfConfigFor({
          arch: 'qwen3',
          layers: 2,
          hidden: 48,
          heads: 4,
          kvHeads: 2,
          intermediate: 96,
          vocab: VOCAB,
          tieEmbeddings: true,
        });
        const make = (): CausalLM => {
          const m = CausalLM.random(hf, 21);
          m.memory = { logprobChunk: 4, checkpointLayers: true };
          if (lora) {
            m.attachLora(
              {
                rank: 4,
                alpha: 8,
                dropout: 0,
                targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
              },
              2,
            );
            for (const [n, v] of m.namedVariables())
              if (n.endsWith('lora_B.weight'))
                tf.tidy(() => v.assign(tf.mul(tf.randomNormal(v.shape, 0, 1, 'float32', 6), 0.05)));
          }
          return m;
        };
        const seqs = sequences();
        const ours = make();
        const reference = make();
        const initial = snapshot(ours);
        const optimizer = new AdamW({ lr: 1e-2 });
        const accumulator = new GradientAccumulator(ours.trainableVariables());
        const got = grpoUpdate({ model: ours, optimizer, accumulator, lr: 1e-2 }, seqs, CFG);
        accumulator.dispose();
        optimizer.dispose();
        const want = updateAllPositions(reference, seqs, CFG);
        expect(got['batch/micro_batches']).toBe(3);
        expect(got['losses/total']).toBeCloseTo(want.loss, 6);
        expect(Math.abs(got['grad/norm'] - want.norm) / want.norm).toBeLessThan(1e-5);
        expect(want.norm).toBeGreaterThan(1e-3);
        const w = snapshot(reference);
        let moved = 0;
        for (const [name, x] of snapshot(ours)) {
          const o = w.get(name) as Float32Array;
          expect(Math.max(...x.map((v, i) => Math.abs(v - (o[i] as number)))), name).toBeLessThan(1e-5);
          const x0 = initial.get(name) as Float32Array;
          moved += x.some((v, i) => Math.abs(v - (x0[i] as number)) > 1e-4) ? 1 : 0;
        }
        expect(moved).toBe(initial.size); // every trainable variable took the step
        ours.dispose();
        reference.dispose();
      },
    );
  }
});
