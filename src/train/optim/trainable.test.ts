import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { configSchema } from '../../config/schema.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS } from '../../model/io/peft.ts';
import { readSafetensors } from '../../model/io/safetensors.ts';
import type { PairSequences, RlSequence, SftSequence } from '../batches/sequences.ts';
import { loadCheckpointModel, loadOptimizerState, OPTIMIZER_FILE, saveCheckpoint } from '../checkpoints/checkpoint.ts';
import { grpoUpdate, type GrpoUpdateConfig } from '../grpo/update.ts';
import { dpoUpdate } from '../supervised/dpo.ts';
import { sftUpdate } from '../supervised/sft.ts';
import { GradientAccumulator } from './accumulate.ts';
import { AdamW } from './adamw.ts';
import { prepareForTraining, trainingSetup } from './trainable.ts';
import { bf16Ready, packBf16, unpackBf16 } from '../../model/bf16.ts';
import { testBackend } from '../../../test/backend.ts';

const HF = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, vocab: 40 });
const LORA = trainingSetup({
  lora: {
    rank: 4,
    alpha: 8,
    dropout: 0,
    targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    baseDtype: 'float32',
  },
  logprobChunk: 0,
  checkpointLayers: false,
});
const SFT: SftSequence[] = [
  { ids: [1, 2, 3, 10, 11, 12], trainMask: [0, 0, 0, 1, 1, 1] },
  { ids: [1, 4, 20, 21], trainMask: [0, 0, 1, 1] },
];
const rl = (ids: number[], trainMask: number[], adv: number): RlSequence => ({
  ids,
  trainMask,
  sampleLogp: ids.map(() => 0),
  adv,
  source: { trajectory: 't', agent: 0, message: 1 },
});
const RL: RlSequence[] = [
  rl([1, 2, 5, 6, 7], [0, 0, 1, 1, 1], 1),
  rl([1, 2, 8, 9], [0, 0, 1, 1], -1),
  rl([1, 3, 5, 7, 9, 11], [0, 0, 1, 1, 1, 1], 0.5),
];
const GRPO: GrpoUpdateConfig = {
  clipLow: 0.2,
  clipHigh: 0.28,
  klBeta: 0.1,
  aggregation: 'token-mean',
  microBatch: 2,
  epochs: 1,
  gradClip: 1,
  sumNormLength: 0,
  oldLogp: 'recompute',
  logEntropy: false,
};
const PAIRS: PairSequences[] = [
  { chosen: { ids: [1, 2, 10, 11], trainMask: [0, 0, 1, 1] }, rejected: { ids: [1, 2, 12], trainMask: [0, 0, 1] } },
  { chosen: { ids: [1, 3, 20], trainMask: [0, 0, 1] }, rejected: { ids: [1, 3, 21, 22], trainMask: [0, 0, 1, 1] } },
];

let dir: string;
beforeAll(async () => {
  await initBackend(testBackend());
  dir = await mkdtemp(join(tmpdir(), 'sharp-trainable-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const snapshot = (vars: ReadonlyMap<string, tf.Variable>) =>
  new Map([...vars].map(([n, v]) => [n, Float32Array.from(v.dataSync())]));

function loraModel(seed: number) {
  const model = CausalLM.random(HF, seed);
  prepareForTraining(model, LORA, 7);
  const optimizer = new AdamW({ lr: 1e-2, weightDecay: 0.01 });
  const accumulator = new GradientAccumulator(model.trainableVariables());
  return { model, optimizer, accumulator, dispose: () => [accumulator, optimizer, model].forEach((x) => x.dispose()) };
}

/** Base weights bit-identical, every adapter B moved (A moves too, except where its gradient is exactly 0). */
function expectOnlyAdaptersMoved(
  model: CausalLM,
  base0: Map<string, Float32Array>,
  lora0: Map<string, Float32Array>,
): void {
  for (const [n, v] of model.baseVariables())
    expect(Array.from(v.dataSync()), n).toEqual(Array.from(base0.get(n) as Float32Array));
  let moved = 0;
  for (const [n, v] of model.namedVariables()) {
    const before = lora0.get(n) as Float32Array;
    const d = Math.max(...Array.from(v.dataSync(), (x, i) => Math.abs(x - (before[i] as number))));
    if (n.endsWith('lora_B.weight')) expect(d, n).toBeGreaterThan(0);
    if (d > 0) moved++;
  }
  expect(moved).toBeGreaterThan(model.namedVariables().size / 2);
}

describe('training LoRA adapters only', () => {
  it('trainingSetup reads train.lora (rank 0 = full-parameter) and the memory keys; defaults change nothing', () => {
    const t = configSchema.parse({}).train;
    expect(trainingSetup(t)).toEqual({ lora: undefined, logprobChunk: 0, checkpointLayers: false, bf16Base: false });
    expect(t.lora).toEqual({
      rank: 0,
      alpha: 32,
      dropout: 0,
      targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      baseDtype: 'float32',
    });
    // a bfloat16 base only means something under LoRA
    expect(trainingSetup(configSchema.parse({ train: { lora: { baseDtype: 'bfloat16' } } }).train).bf16Base).toBe(
      false,
    );
    expect(() => configSchema.parse({ train: { lora: { rank: 4, baseDtype: 'bf16' } } })).toThrow(/baseDtype/);
    const m = CausalLM.random(HF, 1);
    prepareForTraining(m, trainingSetup(t), 0);
    expect(m.lora).toBeUndefined();
    expect(m.trainableVariables()).toHaveLength(m.baseVariables().size);
    const t2 = configSchema.parse({
      train: { lora: { rank: 8, targets: ['q_proj', 'v_proj'] }, logprobChunk: 256, checkpointLayers: true },
    }).train;
    prepareForTraining(m, trainingSetup(t2), 0);
    expect(m.memory).toEqual({ logprobChunk: 256, checkpointLayers: true });
    expect(m.trainableVariables()).toHaveLength(2 * 2 * 2);
    expect(m.lora?.scale).toBe(4);
    m.dispose();
  });

  it(
    'GRPO (with the KL reference = base, adapters disabled) and SFT steps change the adapters and leave the base ' +
      'bit-identical',
    () => {
      for (const which of ['grpo', 'sft'] as const) {
        const t = loraModel(3);
        const base0 = snapshot(t.model.baseVariables());
        const lora0 = snapshot(t.model.namedVariables());
        const count = tf.memory().numTensors;
        if (which === 'grpo') {
          // No ref passed: klBeta > 0 uses the base view. At step 1 the adapters are zero, so the policy is the base:
          // KL 0.
          const s = grpoUpdate(
            { model: t.model, optimizer: t.optimizer, accumulator: t.accumulator, lr: 1e-2 },
            RL,
            GRPO,
          );
          expect(s['losses/ref_kl']).toBe(0);
          const s2 = grpoUpdate(
            { model: t.model, optimizer: t.optimizer, accumulator: t.accumulator, lr: 1e-2 },
            RL,
            GRPO,
          );
          expect(s2['losses/ref_kl']).toBeGreaterThan(0);
        } else {
          sftUpdate({ model: t.model, optimizer: t.optimizer, accumulator: t.accumulator, lr: 1e-2, padId: 0 }, SFT, {
            microBatch: 1,
            gradClip: 1,
          });
          sftUpdate({ model: t.model, optimizer: t.optimizer, accumulator: t.accumulator, lr: 1e-2, padId: 0 }, SFT, {
            microBatch: 1,
            gradClip: 1,
          });
        }
        expectOnlyAdaptersMoved(t.model, base0, lora0);
        // AdamW's m and v of each adapter: no state for the frozen base
        expect(tf.memory().numTensors - count).toBe(2 * t.model.namedVariables().size);
        t.dispose();
      }
    },
  );

  it('train.lora.baseDtype bfloat16 packs the base; a GRPO step then matches the rounded float32 base and moves only adapters', (ctx) => {
    if (!bf16Ready()) ctx.skip(); // the pure-wasm fallback has no bfloat16 kernels
    const t = configSchema.parse({ train: { lora: { rank: 4, alpha: 8, baseDtype: 'bfloat16' } } }).train;
    const setup = trainingSetup(t);
    expect(setup.bf16Base).toBe(true);
    const run = (m: CausalLM): number => {
      prepareForTraining(m, setup, 7);
      const optimizer = new AdamW({ lr: 1e-2, weightDecay: 0.01 });
      const accumulator = new GradientAccumulator(m.trainableVariables());
      const s = grpoUpdate({ model: m, optimizer, accumulator, lr: 1e-2 }, RL, { ...GRPO, klBeta: 0 });
      accumulator.dispose();
      optimizer.dispose();
      return s['losses/total'] as number;
    };
    const packed = CausalLM.random(HF, 3);
    const rounded = CausalLM.random(HF, 3);
    for (const v of rounded.baseVariables().values())
      if (v.rank === 2) v.assign(tf.tensor(unpackBf16(packBf16(v.dataSync() as Float32Array)), v.shape));
    prepareForTraining(packed, setup, 7);
    const base0 = new Map([...packed.baseVariables()].map(([n, v]) => [n, Array.from(v.dataSync())]));
    const a = run(packed);
    const b = run(rounded);
    expect(packed.bf16Base).toBe(true);
    expect(Math.abs(a - b)).toBeLessThan(1e-5);
    // the packed base is untouched by the step
    for (const [n, v] of packed.baseVariables()) expect(Array.from(v.dataSync()), n).toEqual(base0.get(n));
    const pa = snapshot(packed.namedVariables());
    const pb = snapshot(rounded.namedVariables());
    for (const [n, x] of pa) {
      const y = pb.get(n)!;
      expect(Math.max(...x.map((u, i) => Math.abs(u - (y[i] as number)))), n).toBeLessThan(1e-5);
    }
    packed.dispose();
    rounded.dispose();
  });

  it('DPO against the base view: first loss ln 2 (adapters start at zero), then only adapters move', () => {
    const t = loraModel(4);
    const base0 = snapshot(t.model.baseVariables());
    const lora0 = snapshot(t.model.namedVariables());
    const ctx = {
      model: t.model,
      ref: t.model.baseView(),
      optimizer: t.optimizer,
      accumulator: t.accumulator,
      lr: 1e-2,
      padId: 0,
    };
    const first = dpoUpdate(ctx, PAIRS, { beta: 0.5, microBatch: 2, weight: 1, gradClip: 1 });
    expect(first['dpo/loss']).toBeCloseTo(Math.LN2, 6);
    const second = dpoUpdate(ctx, PAIRS, { beta: 0.5, microBatch: 2, weight: 1, gradClip: 1 });
    expect(second['dpo/loss']).toBeLessThan(first['dpo/loss']);
    expectOnlyAdaptersMoved(t.model, base0, lora0);
    t.dispose();
  });

  it('checkpoints hold the adapters (PEFT layout) and their AdamW state only; a resume continues bit for bit', async () => {
    const baseDir = join(dir, 'base');
    const m0 = CausalLM.random(HF, 5);
    await m0.save(baseDir);
    m0.dispose();
    const start = async (): Promise<CausalLM> => CausalLM.load(baseDir);
    const run = async (model: CausalLM, optimizer: AdamW, steps: number): Promise<void> => {
      const accumulator = new GradientAccumulator(model.trainableVariables());
      for (let i = 0; i < steps; i++) grpoUpdate({ model, optimizer, accumulator, lr: 1e-2 }, RL, GRPO);
      accumulator.dispose();
    };
    // Straight: 3 steps.
    const straight = await start();
    prepareForTraining(straight, LORA, 7);
    const opt1 = new AdamW({ lr: 1e-2 });
    await run(straight, opt1, 3);
    // 1 step, checkpoint, resume, 2 steps.
    const a = await start();
    prepareForTraining(a, LORA, 7);
    const opt2 = new AdamW({ lr: 1e-2 });
    await run(a, opt2, 1);
    const runDir = join(dir, 'run');
    const ck = await saveCheckpoint(runDir, {
      model: a,
      optimizer: opt2,
      state: { step: 1, dataCursor: 0, rng: [1], configHash: 'h' },
      keep: 2,
    });
    expect(existsSync(join(ck, ADAPTER_CONFIG))).toBe(true);
    expect(existsSync(join(ck, ADAPTER_WEIGHTS))).toBe(true);
    expect(existsSync(join(ck, 'model.safetensors'))).toBe(false);
    expect(existsSync(join(ck, 'config.json'))).toBe(false);
    const opt = await readSafetensors(join(ck, OPTIMIZER_FILE));
    const keys = [...opt.keys()].filter((k) => k !== 'step');
    expect(keys).toHaveLength(2 * a.namedVariables().size);
    expect(
      keys.every((k) => k.startsWith('base_model.model.model.layers.') && /lora_[AB]\.weight\.exp_avg(_sq)?$/.test(k)),
    ).toBe(true);
    a.dispose();
    opt2.dispose();

    const b = await loadCheckpointModel(ck, start);
    prepareForTraining(b, LORA, 999); // adapters already attached: the seed is not used
    const opt3 = new AdamW({ lr: 1e-2 });
    await loadOptimizerState(ck, b, opt3);
    await run(b, opt3, 2);
    for (const [n, v] of straight.namedVariables())
      expect(Array.from((b.namedVariables().get(n) as tf.Variable).dataSync()), n).toEqual(Array.from(v.dataSync()));
    // The adapter folder also loads on its own (base_model_name_or_path is the base folder).
    const alone = await CausalLM.load(ck);
    expect(alone.lora?.settings.rank).toBe(4);
    [straight, b, alone, opt1, opt3].forEach((x) => x.dispose());
  });
});
