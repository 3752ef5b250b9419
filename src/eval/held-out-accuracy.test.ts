import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { configSchema } from '../config/schema.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { expertPolicy, NO_FAILURES } from '../rollout/scripted/expert.ts';
import { plantedReports } from './planted.ts';
import { rollout } from '../rollout/engine.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../tokenizer/fit.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusteredInterval, heldOutAccuracy, policyAccuracy } from './held-out-accuracy.ts';
import { heldOutSplits, loadTrainData } from '../recipes/stages/train-data.ts';

beforeAll(async () => initBackend('wasm'));
afterAll(async () => closeCodeSandbox());

describe('held-out accuracy', () => {
  const cfg = configSchema.parse({
    data: { synthetic: { seed: 2, train: 1, heldOut: 4, minHops: 2, maxHops: 2 } },
    rollout: { maxNewTokens: 8 },
  });
  const { heldOut } = loadTrainData(cfg.data);

  it('scores one trajectory per episode with the training success function', async () => {
    // The scripted expert solves every synthetic 2-hop question: 4 / 4.
    expect(await policyAccuracy(expertPolicy(), heldOut, cfg)).toMatchObject({
      accuracy: 1,
      correct: 4,
      total: 4,
      answered: 1,
    });
    // A saboteur worker answers the last hop wrongly on every episode: it answers, but 0 / 4 are right.
    const sabotaged = expertPolicy({
      steps: () => [
        { kind: 'hop', hop: 0 },
        { kind: 'hop', hop: 1, sabotage: 'Nobody Atall' },
      ],
    });
    expect(await policyAccuracy(sabotaged, heldOut, cfg)).toMatchObject({
      accuracy: 0,
      correct: 0,
      total: 4,
      answered: 1,
    });
  });

  it('k samples per question: per-question counts, total n x k, the interval over question means', async () => {
    // Worker 1 sabotages hop 1 on every episode but the first two: questions 1-2 right 3 of 3, 3-4 wrong.
    const ids = heldOut.map((e) => e.id);
    const policy = expertPolicy({
      steps: (e) =>
        ids.indexOf(e.id) < 2
          ? [
              { kind: 'hop', hop: 0 },
              { kind: 'hop', hop: 1 },
            ]
          : [
              { kind: 'hop', hop: 0 },
              { kind: 'hop', hop: 1, sabotage: 'Nobody Atall' },
            ],
    });
    const r = await policyAccuracy(policy, heldOut, cfg, 3);
    expect(r).toMatchObject({ accuracy: 0.5, correct: 6, total: 12, samples: 3 });
    expect(r.questions).toEqual(ids.map((id, i) => ({ id, correct: i < 2 ? 3 : 0 })));
    // per-question means 1, 1, 0, 0: mean 0.5, sd 0.57735, half-width 1.96 x 0.57735 / 2 = 0.5658 -> clipped [0, 1]
    expect(r.interval).toEqual([0, 1]);
    // mean 0.5, sd of (0.25, 0.75, 0.5, 0.5) = 0.20412; half-width 1.959964 x 0.20412 / 2 = 0.20004
    const [lo, hi] = clusteredInterval([0.25, 0.75, 0.5, 0.5]);
    expect(lo).toBeCloseTo(0.29996, 4);
    expect(hi).toBeCloseTo(0.70004, 4);
  });

  it('with planted claims: the share of worker calls repeating them, overall and per question', async () => {
    const w = configSchema.parse({
      data: {
        synthetic: {
          seed: 5,
          train: 1,
          heldOut: 12,
          minHops: 3,
          maxHops: 3,
          shapes: { comparison: 1 },
          compareItems: { min: 2, max: 2 },
          misleading: { rate: 1 },
        },
      },
      rollout: { maxNewTokens: 8, maxParallelDelegations: 2 },
    });
    const eps = loadTrainData(w.data).heldOut;
    const trusting = expertPolicy({ failures: { ...NO_FAILURES, trustPlanted: 1 } });
    const r = await policyAccuracy(trusting, eps, w, 2);
    // The same counts as plantedReports over the same trajectories (the expert's failures are seeded per episode and
    // sample).
    const { trajectories } = await rollout(trusting, eps, { cfg: w.rollout, groupSize: 2 });
    const want = plantedReports(trajectories, eps);
    expect(want.planted).toBeGreaterThan(0);
    expect(r.planted).toEqual(want);
    expect((r.questions ?? []).reduce((a, q) => a + (q.planted ?? 0), 0)).toBe(want.planted);
    expect((r.questions ?? []).reduce((a, q) => a + (q.calls ?? 0), 0)).toBe(want.calls);
    // Chain-only episodes carry no planted counts at all.
    const plain = await policyAccuracy(expertPolicy(), heldOut, cfg);
    expect(plain.planted).toBeUndefined();
    expect(plain.questions?.[0]).toEqual({ id: heldOut[0]?.id, correct: 1 });
  });

  it('splits the held-out episodes into validation (first share) and test (the rest)', () => {
    const s = heldOutSplits(heldOut, 0.5);
    expect(s.validation.map((e) => e.id)).toEqual(heldOut.slice(0, 2).map((e) => e.id));
    expect(s.test.map((e) => e.id)).toEqual(heldOut.slice(2).map((e) => e.id));
    expect(heldOutSplits(heldOut, 0).test).toHaveLength(4);
    expect(() => heldOutSplits(heldOut.slice(0, 1), 0.9)).not.toThrow();
    expect(() => heldOutSplits([], 0.5)).toThrow(/leaves no test episodes of 0 held out/);
  });

  it('runs the LM greedily through the engine (a random init answers nothing)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'sharp-acc-')), 'tok');
    await writeTokenizerFiles(
      dir,
      fitBpeTokenizer(
        heldOut.map((e) => e.question),
        300,
      ),
    );
    const tok = await Tokenizer.load(dir);
    const model = CausalLM.random(
      hfConfigFor({
        arch: 'llama',
        layers: 1,
        hidden: 32,
        heads: 2,
        kvHeads: 1,
        intermediate: 64,
        vocab: tok.vocabSize,
      }),
      0,
    );
    const a = await heldOutAccuracy(model, tok, heldOut.slice(0, 2), cfg);
    const b = await heldOutAccuracy(model, tok, heldOut.slice(0, 2), cfg);
    expect(a).toMatchObject({ accuracy: 0, correct: 0, total: 2, answered: 0 });
    expect({ ...b, seconds: 0 }).toEqual({ ...a, seconds: 0 }); // greedy: the same result twice
    model.dispose();
  });
});
