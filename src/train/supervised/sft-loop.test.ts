import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { listCheckpoints, SFT_CHECKPOINTS_DIR } from '../checkpoints/checkpoint.ts';
import { readMetrics } from '../metrics/jsonl.ts';
import { phaseResumePoint } from '../checkpoints/phase-checkpoints.ts';
import { maxWeightDiff } from '../../../test/weights.ts';
import { readTranscripts } from './transcripts-jsonl.ts';
import { runSft } from './sft-loop.ts';
import { configSchema } from '../../config/schema.ts';
import { optimizerSettings } from '../optim/optimizer.ts';

/** The SFT optimizer settings of a config whose train section sets `train` (schema defaults elsewhere). */
const sftOptimizer = (train: Record<string, unknown>) => optimizerSettings(configSchema.parse({ train }).train, 'sft');

let root: string;
let tok: Tokenizer;
beforeAll(async () => {
  await initBackend('wasm');
  root = await mkdtemp(join(tmpdir(), 'sharp-sftloop-'));
  await writeTokenizerFiles(
    join(root, 'tok'),
    fitBpeTokenizer(['Who founded Zorvex? <answer>Alin Marek</answer> When? <answer>1975</answer>'], 300),
  );
  tok = await Tokenizer.load(join(root, 'tok'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('runSft', () => {
  it('fits two transcripts: loss falls from ~ln V, metrics written, tensors flat', async () => {
    const file = join(root, 'sft.jsonl');
    const conv = (q: string, a: string) =>
      JSON.stringify({
        messages: [
          { role: 'user', content: q, train: false },
          { role: 'assistant', content: a, train: true },
        ],
      });
    await writeFile(
      file,
      [conv('Who founded Zorvex?', '<answer>Alin Marek</answer>'), conv('When?', '<answer>1975</answer>')].join('\n') +
        '\n',
    );
    const model = CausalLM.random(
      hfConfigFor({
        arch: 'qwen3',
        layers: 2,
        hidden: 64,
        heads: 4,
        kvHeads: 2,
        intermediate: 96,
        vocab: tok.vocabSize,
      }),
      2,
    );
    const n = tf.memory().numTensors;
    const r = await runSft({
      model,
      enc: tok,
      padId: tok.padId,
      transcripts: readTranscripts(file),
      steps: 25,
      batch: 2,
      optimizer: sftOptimizer({ sft: { lr: 1e-2, steps: 25 } }),
      microBatch: 2,
      gradClip: 1,
      seed: 0,
      runDir: root,
    });
    expect(tf.memory().numTensors).toBe(n);
    expect(r.sequences).toBe(2);
    // ln(300) = 5.70 for a near-uniform random init
    expect(r.firstLoss).toBeGreaterThan(5.3);
    expect(r.lastLoss).toBeLessThan(0.5);
    const m = readMetrics(join(root, 'sft-metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(m[24]?.['sft/loss']).toBeCloseTo(r.lastLoss, 6);
    model.dispose();
  });

  it(
    'weights pushed to Inf by a finite gradient stop the run at its last step in one line, before the caller saves ' +
      'them',
    async () => {
      const file = join(root, 'inf.jsonl');
      const conv = (q: string, a: string) =>
        JSON.stringify({
          messages: [
            { role: 'user', content: q, train: false },
            { role: 'assistant', content: a, train: true },
          ],
        });
      await writeFile(file, conv('Who founded Zorvex?', '<answer>Alin Marek</answer>') + '\n');
      const model = CausalLM.random(
        hfConfigFor({
          arch: 'qwen3',
          layers: 1,
          hidden: 32,
          heads: 2,
          kvHeads: 1,
          intermediate: 48,
          vocab: tok.vocabSize,
        }),
        5,
      );
      // Decoupled decay: each step multiplies every matrix by (1 - lr x decay) = 1 - 1e30, so two steps overflow
      // float32.
      const optimizer = sftOptimizer({
        weightDecay: 1e30,
        sft: { lr: 1, steps: 2, warmupSteps: 0, schedule: 'constant' },
      });
      await expect(
        runSft({
          model,
          enc: tok,
          padId: tok.padId,
          transcripts: readTranscripts(file),
          steps: 2,
          batch: 1,
          optimizer,
          microBatch: 1,
          gradClip: 0,
          seed: 0,
        }),
      ).rejects.toThrow(/^sft step 2: weight '.*' became NaN or Inf; not saved/);
      model.dispose();
    },
  );

  it('honours the optimizer settings: the schedule reaches the metrics, the betas the weights', async () => {
    const file = join(root, 'opt.jsonl');
    const conv = (q: string, a: string) =>
      JSON.stringify({
        messages: [
          { role: 'user', content: q, train: false },
          { role: 'assistant', content: a, train: true },
        ],
      });
    await writeFile(
      file,
      [conv('Who founded Zorvex?', '<answer>Alin Marek</answer>'), conv('When?', '<answer>1975</answer>')].join('\n') +
        '\n',
    );
    const hf = hfConfigFor({
      arch: 'qwen3',
      layers: 1,
      hidden: 32,
      heads: 2,
      kvHeads: 1,
      intermediate: 48,
      vocab: tok.vocabSize,
    });
    const base = {
      enc: tok,
      padId: tok.padId,
      transcripts: readTranscripts(file),
      steps: 4,
      batch: 2,
      microBatch: 2,
      gradClip: 1,
      seed: 0,
    };
    const a = CausalLM.random(hf, 4);
    const b = CausalLM.random(hf, 4);
    await runSft({
      ...base,
      model: a,
      runDir: join(root, 'opt-a'),
      optimizer: sftOptimizer({ minLrRatio: 0.5, sft: { lr: 1e-2, steps: 4, schedule: 'cosine', warmupSteps: 2 } }),
    });
    await runSft({
      ...base,
      model: b,
      runDir: join(root, 'opt-b'),
      optimizer: sftOptimizer({
        minLrRatio: 0.5,
        beta1: 0.5,
        beta2: 0.9,
        adamEps: 1e-4,
        sft: { lr: 1e-2, steps: 4, schedule: 'cosine', warmupSteps: 2 },
      }),
    });
    // warmup 2: 5e-3, 1e-2; then cosine over the 2 remaining steps to a floor of 0.5 x peak:
    // step 2 at the peak, step 3 halfway, 5e-3 + 5e-3 (1 + cos(pi / 2)) / 2 = 7.5e-3
    const lrs = readMetrics(join(root, 'opt-a', 'sft-metrics.jsonl')).map((x) => x['sft/lr'] as number);
    expect(lrs.length).toBe(4);
    [5e-3, 1e-2, 1e-2, 7.5e-3].forEach((want, i) => expect(lrs[i]).toBeCloseTo(want, 12));
    expect(maxWeightDiff(a, b)).toBeGreaterThan(1e-4); // other betas and eps, other weights
    a.dispose();
    b.dispose();
  });

  it('4 steps straight equal 2 steps, a crash, a resume from the step-2 checkpoint and 2 more steps', async () => {
    const file = join(root, 'three.jsonl');
    const conv = (q: string, a: string) =>
      JSON.stringify({
        messages: [
          { role: 'user', content: q, train: false },
          { role: 'assistant', content: a, train: true },
        ],
      });
    // 3 sequences, batch 2: step 2 draws across the first epoch boundary, so the resumed order matters.
    await writeFile(
      file,
      [
        conv('Who founded Zorvex?', '<answer>Alin Marek</answer>'),
        conv('When?', '<answer>1975</answer>'),
        conv('Who?', '<answer>Zorvex</answer>'),
      ].join('\n') + '\n',
    );
    const transcripts = readTranscripts(file);
    const hf = hfConfigFor({
      arch: 'qwen3',
      layers: 2,
      hidden: 64,
      heads: 4,
      kvHeads: 2,
      intermediate: 96,
      vocab: tok.vocabSize,
    });
    const base = {
      enc: tok,
      padId: tok.padId,
      transcripts,
      steps: 4,
      batch: 2,
      optimizer: sftOptimizer({ sft: { lr: 1e-2, steps: 4, schedule: 'cosine', warmupSteps: 1 } }),
      microBatch: 1,
      gradClip: 1,
      seed: 5,
    };

    const straightDir = join(root, 'straight');
    const straight = CausalLM.random(hf, 3);
    const s = await runSft({ ...base, model: straight, runDir: straightDir });

    const runDir = join(root, 'resumed');
    const ck = { runDir, folder: SFT_CHECKPOINTS_DIR, every: 2, keep: 2, configHash: 'cfg-a' };
    const killed = CausalLM.random(hf, 3);
    const crash = (step: number): void => {
      if (step === 3) throw new Error('killed after step 3');
    };
    await expect(runSft({ ...base, model: killed, runDir, checkpoints: ck, onStep: crash })).rejects.toThrow(
      'killed after step 3',
    );
    killed.dispose();
    expect(readMetrics(join(runDir, 'sft-metrics.jsonl')).map((x) => x.step)).toEqual([1, 2, 3]);
    expect((await listCheckpoints(runDir, SFT_CHECKPOINTS_DIR)).map((c) => c.step)).toEqual([2]);
    expect(await listCheckpoints(runDir)).toEqual([]); // the RL loop's folder holds none of them

    await expect(phaseResumePoint(runDir, SFT_CHECKPOINTS_DIR, 'cfg-b')).rejects.toThrow(
      /sft-checkpoints\/step-00000002 was written under another config/,
    );
    const resume = await phaseResumePoint(runDir, SFT_CHECKPOINTS_DIR, 'cfg-a');
    expect(resume?.state.step).toBe(2);
    expect(resume?.state.dataCursor).toBe(4); // 2 steps of 2 sequences
    const resumed = await CausalLM.load(resume?.dir as string);
    const r = await runSft({ ...base, model: resumed, runDir, checkpoints: { ...ck, resume } });
    expect(r.resumedFrom).toBe(2);
    expect(r.firstLoss).toBe(s.firstLoss); // kept in the checkpoint
    expect(r.lastLoss).toBeCloseTo(s.lastLoss, 6);
    expect(maxWeightDiff(straight, resumed)).toBeLessThan(1e-6);
    const m = readMetrics(join(runDir, 'sft-metrics.jsonl'));
    const ms = readMetrics(join(straightDir, 'sft-metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual([1, 2, 3, 4]);
    for (const k of [2, 3]) expect(m[k]?.['sft/loss'] as number).toBeCloseTo(ms[k]?.['sft/loss'] as number, 6);
    straight.dispose();
    resumed.dispose();
  }, 60_000);
});
