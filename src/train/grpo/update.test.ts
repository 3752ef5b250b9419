import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { generate, type GenerateResult } from '../../generation/generate.ts';
import { Rng } from '../../random/rng.ts';
import { tokenStats } from '../../model/logprobs.ts';
import { groupAdvantages } from './advantages.ts';
import { AdamW } from '../optim/adamw.ts';
import { GradientAccumulator } from '../optim/accumulate.ts';
import { advantageTensor, grpoUpdate, type GrpoUpdateConfig } from './update.ts';
import type { RlSequence } from '../batches/sequences.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

// The learning task: prompt -> reward 1 when the answer contains a target word (here a
// target token of a 48-token vocabulary; a random policy hits it in 4 samples with p = 1 - (47/48)^4 = 0.08).
const VOCAB = 48;
const TARGET = 7;
const PROMPT = [1, 2];
const NEW_TOKENS = 4;
const decoder = { decode: (ids: number[]) => ids.map((i) => String.fromCharCode(65 + i)).join('') };
const reward = (r: GenerateResult): number => (r.tokenIds.includes(TARGET) ? 1 : 0);

const CFG: GrpoUpdateConfig = {
  clipLow: 0.2,
  clipHigh: 0.28,
  klBeta: 0,
  aggregation: 'token-mean',
  microBatch: 8,
  epochs: 1,
  gradClip: 1,
  sumNormLength: 0,
  oldLogp: 'recompute',
  logEntropy: false,
};

async function sample(model: CausalLM, rng: Rng, n: number): Promise<GenerateResult[]> {
  const reqs = Array.from({ length: n }, () => ({ promptIds: PROMPT, maxNewTokens: NEW_TOKENS }));
  return generate(model, reqs, { temperature: 1, topK: 0, topP: 1, rng, eosIds: [], decoder });
}

function sequences(results: GenerateResult[]): RlSequence[] | undefined {
  const g = groupAdvantages(
    results.map((r) => [{ role: 'planner' as const, total: reward(r) }]),
    1e-6,
  );
  if (g.skipped) return undefined;
  return results.map((r, i) => ({
    ids: [...PROMPT, ...r.tokenIds],
    trainMask: [...PROMPT.map(() => 0), ...r.tokenIds.map(() => 1)],
    sampleLogp: [...PROMPT.map(() => 0), ...r.logprobs],
    adv: g.adv[i]?.[0] as number,
    source: { trajectory: `t${i}`, agent: 0, message: 1 },
  }));
}

const snapshot = (m: CausalLM) =>
  new Map([...m.namedVariables()].map(([n, v]) => [n, Float32Array.from(v.dataSync())]));

describe('grpoUpdate', () => {
  it('learns the target-word task: mean reward < 0.2 before, > 0.8 after; every variable moves at step 1', async () => {
    const model = CausalLM.random(
      hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, vocab: VOCAB }),
      5,
    );
    const rng = new Rng(123);
    const optimizer = new AdamW({ lr: 1e-2 });
    const accumulator = new GradientAccumulator(model.trainableVariables());
    const ctx = { model, optimizer, accumulator, lr: 1e-2 };
    const meanReward = (rs: GenerateResult[]) => rs.reduce((a, r) => a + reward(r), 0) / rs.length;

    const before = meanReward(await sample(model, rng, 128));
    expect(before).toBeLessThan(0.2);

    const G = 16;
    const initial = snapshot(model);
    let updates = 0;
    const curve: number[] = [];
    for (let step = 0; step < 40; step++) {
      const results = await sample(model, rng, G);
      curve.push(meanReward(results));
      const seqs = sequences(results);
      if (!seqs) {
        if (curve.length >= 3 && curve.slice(-3).every((c) => c === 1)) break; // solved: groups no longer carry signal
        continue; // all-equal rewards: no signal (a skipped group)
      }
      const stats = grpoUpdate(ctx, seqs, CFG);
      updates++;
      if (updates === 1) {
        // pi_old recomputed by the training forward: the first epoch's ratio is exactly 1.
        expect(stats['losses/ratio_min']).toBeCloseTo(1, 6);
        expect(stats['losses/ratio_max']).toBeCloseTo(1, 6);
        expect(stats['losses/approx_kl']).toBeCloseTo(0, 7);
        expect(stats['batch/tokens']).toBe(G * NEW_TOKENS);
        expect(stats['grad/norm']).toBeGreaterThan(0);
        // Every trainable variable changed after one step.
        const after = snapshot(model);
        const unchanged = [...initial]
          .filter(([n, v]) => (after.get(n) as Float32Array).every((x, i) => x === v[i]))
          .map(([n]) => n);
        expect(unchanged).toEqual([]);
      }
    }

    const after = meanReward(await sample(model, rng, 128));
    // Printed for the record (the learning curve's numbers).
    console.log(
      `target-word task: mean reward ${before.toFixed(3)} -> ${after.toFixed(3)} after ${updates} updates; ` +
        `per-step ${curve.map((c) => c.toFixed(2)).join(' ')}`,
    );
    expect(after).toBeGreaterThan(0.8);
    accumulator.dispose();
    optimizer.dispose();
    model.dispose();
  });

  it('keeps tf.memory().numTensors flat across 20 updates', async () => {
    const model = CausalLM.random(
      hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, vocab: VOCAB }),
      6,
    );
    const rng = new Rng(8);
    let seqs: RlSequence[] | undefined;
    while (!seqs) seqs = sequences(await sample(model, rng, 12));
    const optimizer = new AdamW({ lr: 1e-3, weightDecay: 0.01 });
    const accumulator = new GradientAccumulator(model.trainableVariables());
    const ctx = { model, optimizer, accumulator, lr: 1e-3 };
    grpoUpdate(ctx, seqs, { ...CFG, microBatch: 5 }); // allocates the optimizer moments
    const n = tf.memory().numTensors;
    for (let i = 0; i < 20; i++) grpoUpdate(ctx, seqs, { ...CFG, microBatch: 5 });
    expect(tf.memory().numTensors).toBe(n);
    accumulator.dispose();
    optimizer.dispose();
    model.dispose();
  });

  it('with oldLogp = sampling the first ratio is 1 up to KV-cache numerics, and with a reference logs refKl', async () => {
    const hf = hfConfigFor({
      arch: 'qwen3',
      layers: 2,
      hidden: 64,
      heads: 4,
      kvHeads: 2,
      intermediate: 128,
      vocab: VOCAB,
    });
    const model = CausalLM.random(hf, 9);
    const ref = CausalLM.random(hf, 9);
    const rng = new Rng(4);
    let seqs: RlSequence[] | undefined;
    while (!seqs) seqs = sequences(await sample(model, rng, 16));
    const optimizer = new AdamW({ lr: 1e-3 });
    const accumulator = new GradientAccumulator(model.trainableVariables());
    // Sampling logprobs (KV-cache decode) against the training forward: ratio 1 within float32 noise.
    const first = grpoUpdate({ model, optimizer, accumulator, lr: 1e-3 }, seqs, { ...CFG, oldLogp: 'sampling' });
    expect(Math.abs(first['losses/ratio_min'] - 1)).toBeLessThan(1e-3);
    expect(Math.abs(first['losses/ratio_max'] - 1)).toBeLessThan(1e-3);
    const stats = grpoUpdate({ model, optimizer, accumulator, ref, lr: 1e-3 }, seqs, {
      ...CFG,
      klBeta: 0.1,
      microBatch: 5,
      epochs: 2,
      logEntropy: true,
    });
    expect(stats['batch/micro_batches']).toBe(4); // ceil(16 / 5)
    // The policy has moved (3 updates by the last epoch), the reference has not -> refKl > 0; entropy of a
    // near-uniform 48-way policy is close to ln 48 = 3.87.
    expect(stats['losses/ref_kl']).toBeGreaterThan(0);
    expect(stats['losses/entropy']).toBeGreaterThan(3.4);
    expect(stats['losses/entropy']).toBeLessThan(Math.log(48) + 1e-3);
    expect(() =>
      grpoUpdate({ model, optimizer, accumulator, lr: 1e-3 }, seqs as RlSequence[], { ...CFG, klBeta: 0.1 }),
    ).toThrow('klBeta > 0 needs a reference model');
    expect(() =>
      grpoUpdate(
        { model, optimizer, accumulator, lr: 1e-3 },
        [
          {
            ids: [1, 2],
            trainMask: [1, 1],
            sampleLogp: [0, 0],
            adv: 1,
            source: { trajectory: 't', agent: 0, message: 1 },
          },
        ],
        CFG,
      ),
    ).toThrow('sequence 0 trainMask[0] must be 0');
    accumulator.dispose();
    optimizer.dispose();
    model.dispose();
    ref.dispose();
  });

  it(
    'one epoch with oldLogp = recompute takes pi_old from its own forward: the same loss and step as an explicit ' +
      'pi_old',
    async () => {
      const hf = hfConfigFor({
        arch: 'llama',
        layers: 2,
        hidden: 64,
        heads: 4,
        kvHeads: 2,
        intermediate: 128,
        vocab: VOCAB,
      });
      const shortcut = CausalLM.random(hf, 5);
      const explicit = CausalLM.random(hf, 5);
      const rng = new Rng(6);
      let seqs: RlSequence[] | undefined;
      while (!seqs) seqs = sequences(await sample(shortcut, rng, 16));
      // pi_old computed by a separate forward, handed in as the sampling log-probs.
      const ids = tf.tensor2d(
        seqs.map((s) => s.ids),
        undefined,
        'int32',
      ); // [16, 6]
      const ones = tf.onesLike(ids); // [16, 6]
      const lp = tokenStats(explicit, ids, ones, false).logprobs; // [16, 5]
      const rows = lp.arraySync();
      const withOld = seqs.map((s, r) => ({
        ...s,
        sampleLogp: s.ids.map((_, t) => (t === 0 ? 0 : (rows[r]?.[t - 1] as number))),
      }));
      tf.dispose([ids, ones, lp]);
      const run = (model: CausalLM, batch: RlSequence[], cfg: GrpoUpdateConfig) => {
        const optimizer = new AdamW({ lr: 1e-2 });
        const accumulator = new GradientAccumulator(model.trainableVariables());
        const stats = grpoUpdate({ model, optimizer, accumulator, lr: 1e-2 }, batch, cfg);
        accumulator.dispose();
        optimizer.dispose();
        return stats;
      };
      const before = tf.memory().numTensors;
      const a = run(shortcut, seqs, CFG);
      expect(tf.memory().numTensors).toBe(before);
      const b = run(explicit, withOld, { ...CFG, oldLogp: 'sampling' });
      expect(a['losses/ratio_min']).toBe(1);
      expect(a['losses/ratio_max']).toBe(1);
      expect(a['losses/total']).toBeCloseTo(b['losses/total'], 6);
      expect(a['grad/norm']).toBeCloseTo(b['grad/norm'], 5);
      expect(a['grad/norm']).toBeGreaterThan(0);
      const wb = snapshot(explicit);
      for (const [name, w] of snapshot(shortcut)) {
        const o = wb.get(name) as Float32Array;
        const diff = Math.max(...w.map((x, i) => Math.abs(x - (o[i] as number))));
        expect(diff, name).toBeLessThan(1e-5);
      }
      shortcut.dispose();
      explicit.dispose();
    },
  );

  it(
    'per-token advantages: laid out as the loss reads them, and equal ones give the per-sequence loss and ' +
      'gradient',
    async () => {
      // Position t of [b, L-1] scores ids[t + 1]; the shorter row falls back to its adv, padding too (masked anyway).
      const seq = (ids: number[], trainMask: number[], adv: number, tokenAdv?: number[]): RlSequence => ({
        ids,
        trainMask,
        sampleLogp: ids.map(() => 0),
        adv,
        ...(tokenAdv ? { tokenAdv } : {}),
        source: { trajectory: 't', agent: 0, message: 1 },
      });
      const a = advantageTensor([seq([1, 2, 3, 4], [0, 0, 1, 1], 0.5, [0, 0, 2, -3]), seq([1, 2, 3], [0, 1, 1], -1)]);
      expect(a.shape).toEqual([2, 3]);
      expect(Array.from(a.dataSync())).toEqual([0, 2, -3, -1, -1, 0]);
      a.dispose();
      const one = advantageTensor([seq([1, 2], [0, 1], 0.5)]);
      expect(one.shape).toEqual([1]);
      one.dispose();

      const hf = hfConfigFor({
        arch: 'qwen3',
        layers: 2,
        hidden: 64,
        heads: 4,
        kvHeads: 2,
        intermediate: 128,
        vocab: VOCAB,
      });
      let seqs: RlSequence[] | undefined;
      const rng = new Rng(11);
      const sampler = CausalLM.random(hf, 12);
      while (!seqs) seqs = sequences(await sample(sampler, rng, 8));
      sampler.dispose();
      const perToken = seqs.map((s) => ({ ...s, tokenAdv: s.ids.map((_, i) => (s.trainMask[i] ? s.adv : 0)) }));
      const run = (xs: RlSequence[]) => {
        const model = CausalLM.random(hf, 12);
        const optimizer = new AdamW({ lr: 1e-3 });
        const accumulator = new GradientAccumulator(model.trainableVariables());
        const stats = grpoUpdate({ model, optimizer, accumulator, lr: 1e-3 }, xs, CFG);
        const w = snapshot(model);
        accumulator.dispose();
        optimizer.dispose();
        model.dispose();
        return { stats, w };
      };
      const x = run(seqs);
      const y = run(perToken);
      expect(y.stats['losses/total']).toBeCloseTo(x.stats['losses/total'], 6);
      expect(y.stats['grad/norm']).toBeCloseTo(x.stats['grad/norm'], 5);
      // Blaming one token instead changes the update.
      const blamed = perToken.map((s, i) =>
        i === 0 ? { ...s, tokenAdv: s.tokenAdv.map((v, j) => (j === s.ids.length - 1 ? -5 : v)) } : s,
      );
      expect(Math.abs(run(blamed).stats['losses/total'] - x.stats['losses/total'])).toBeGreaterThan(1e-4);
      expect(() => run([{ ...perToken[0], tokenAdv: [0] } as RlSequence])).toThrow('tokenAdv has 1 entries');
    },
  );
});
