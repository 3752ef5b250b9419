import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import type { PreferencePair } from '../../credit/first-error.ts';
import { DPO_CHECKPOINTS_DIR, listCheckpoints } from '../checkpoints/checkpoint.ts';
import { readMetrics } from '../metrics/jsonl.ts';
import { phaseResumePoint } from '../checkpoints/phase-checkpoints.ts';
import { maxWeightDiff } from '../../../test/weights.ts';
import { runDpo } from './dpo-loop.ts';
import { configSchema } from '../../config/schema.ts';
import { optimizerSettings } from '../optim/optimizer.ts';

/** The DPO optimizer settings of a config with train.dpo's lr and steps (schema defaults elsewhere). */
const dpoOptimizer = (lr: number, steps: number) =>
  optimizerSettings(configSchema.parse({ train: { dpo: { lr, steps } } }).train, 'dpo');

let root: string;
let tok: Tokenizer;
beforeAll(async () => {
  await initBackend('wasm');
  root = await mkdtemp(join(tmpdir(), 'sharp-dpoloop-'));
  await writeTokenizerFiles(
    join(root, 'tok'),
    fitBpeTokenizer(['Who founded Zorvex? <answer>Alin Marek</answer> <answer>1975</answer>'], 300),
  );
  tok = await Tokenizer.load(join(root, 'tok'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const pair = (q: string, chosen: string, rejected: string): PreferencePair => ({
  prefix: [{ role: 'user', content: q }],
  chosen,
  rejected,
  metadata: {
    trajectoryId: 't',
    episodeId: 'e',
    messageIndex: 1,
    agent: 0,
    role: 'planner',
    judge: 'rule',
    attempts: 1,
  },
});

describe('runDpo', () => {
  it('starts at ln 2 against a frozen copy and learns to prefer the chosen answers', async () => {
    const hf = hfConfigFor({
      arch: 'qwen3',
      layers: 2,
      hidden: 64,
      heads: 4,
      kvHeads: 2,
      intermediate: 96,
      vocab: tok.vocabSize,
    });
    const model = CausalLM.random(hf, 8);
    const ref = CausalLM.random(hf, 8);
    const n = tf.memory().numTensors;
    const r = await runDpo({
      model,
      ref,
      enc: tok,
      padId: tok.padId,
      pairs: [
        pair('Who founded Zorvex?', '<answer>Alin Marek</answer>', '<answer>1975</answer>'),
        pair('When?', '<answer>1975</answer>', '<answer>Alin Marek</answer>'),
      ],
      steps: 6,
      batch: 2,
      optimizer: dpoOptimizer(1e-2, 6),
      beta: 0.5,
      microBatch: 2,
      gradClip: 1,
      seed: 0,
      runDir: root,
    });
    expect(tf.memory().numTensors).toBe(n);
    expect(r.first['dpo/loss']).toBeCloseTo(Math.LN2, 5); // policy == reference at the first step
    expect(r.last['dpo/accuracy']).toBe(1);
    expect(r.last['dpo/loss']).toBeLessThan(0.3);
    expect(readMetrics(join(root, 'dpo-metrics.jsonl'))).toHaveLength(6);
    model.dispose();
    ref.dispose();
  });

  it('4 steps straight equal 2 steps, a crash, a resume from the step-2 checkpoint and 2 more steps', async () => {
    const hf = hfConfigFor({
      arch: 'qwen3',
      layers: 2,
      hidden: 64,
      heads: 4,
      kvHeads: 2,
      intermediate: 96,
      vocab: tok.vocabSize,
    });
    const ref = CausalLM.random(hf, 8);
    // 3 pairs, batch 2: step 2 draws across the first epoch boundary, so the resumed order matters.
    const pairs = [
      pair('Who founded Zorvex?', '<answer>Alin Marek</answer>', '<answer>1975</answer>'),
      pair('When?', '<answer>1975</answer>', '<answer>Alin Marek</answer>'),
      pair('Who?', '<answer>Zorvex</answer>', '<answer>1975</answer>'),
    ];
    const base = {
      ref,
      enc: tok,
      padId: tok.padId,
      pairs,
      steps: 4,
      batch: 2,
      optimizer: dpoOptimizer(1e-2, 4),
      beta: 0.5,
      microBatch: 1,
      gradClip: 1,
      seed: 5,
    };

    const straightDir = join(root, 'straight');
    const straight = CausalLM.random(hf, 8);
    const s = await runDpo({ ...base, model: straight, runDir: straightDir });

    const runDir = join(root, 'resumed');
    const ck = { runDir, folder: DPO_CHECKPOINTS_DIR, every: 2, keep: 2, configHash: 'cfg-a' };
    const killed = CausalLM.random(hf, 8);
    const crash = (step: number): void => {
      if (step === 3) throw new Error('killed after step 3');
    };
    await expect(runDpo({ ...base, model: killed, runDir, checkpoints: ck, onStep: crash })).rejects.toThrow(
      'killed after step 3',
    );
    killed.dispose();
    expect(readMetrics(join(runDir, 'dpo-metrics.jsonl')).map((x) => x.step)).toEqual([1, 2, 3]);
    expect((await listCheckpoints(runDir, DPO_CHECKPOINTS_DIR)).map((c) => c.step)).toEqual([2]);
    expect(await listCheckpoints(runDir)).toEqual([]); // the RL loop's folder holds none of them

    const resume = await phaseResumePoint(runDir, DPO_CHECKPOINTS_DIR, 'cfg-a');
    expect(resume?.state.step).toBe(2);
    expect(resume?.state.dataCursor).toBe(4);
    const resumed = await CausalLM.load(resume?.dir as string);
    const r = await runDpo({ ...base, model: resumed, runDir, checkpoints: { ...ck, resume } });
    expect(r.resumedFrom).toBe(2);
    expect(r.first['dpo/loss']).toBe(s.first['dpo/loss']); // kept in the checkpoint
    expect(r.last['dpo/loss']).toBeCloseTo(s.last['dpo/loss'] as number, 6);
    expect(maxWeightDiff(straight, resumed)).toBeLessThan(1e-6);
    const m = readMetrics(join(runDir, 'dpo-metrics.jsonl'));
    const ms = readMetrics(join(straightDir, 'dpo-metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual([1, 2, 3, 4]);
    for (const k of [2, 3]) expect(m[k]?.['dpo/loss'] as number).toBeCloseTo(ms[k]?.['dpo/loss'] as number, 6);
    straight.dispose();
    resumed.dispose();
    ref.dispose();
  }, 60_000);
});
