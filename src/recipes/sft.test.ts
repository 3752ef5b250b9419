import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../backend/select.ts';
import { configSchema } from '../config/schema.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { loadTrainData } from './stages/train-data.ts';
import { expertTranscripts, writeTranscripts } from './stages/expert-transcripts.ts';
import { ensureModel, tokenizerCorpus } from './stages/ensure-model.ts';
import { SFT_CHECKPOINTS_DIR, listCheckpoints } from '../train/checkpoints/checkpoint.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { maxWeightDiff } from '../../test/weights.ts';
import { lockHolder } from '../../test/run-lock-holder.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { UserError } from '../errors.ts';
import { run } from './sft.ts';

let base: string;
let sets: string[];
beforeAll(async () => {
  await initBackend('wasm');
  base = mkdtempSync(join(tmpdir(), 'sharp-sft-cmd-'));
  const cfg = configSchema.parse({
    model: {
      path: join(base, 'm'),
      init: { enabled: true, layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, vocab: 350 },
    },
    data: { synthetic: { seed: 1, train: 3, heldOut: 1, minHops: 2, maxHops: 2 } },
  });
  const { train } = loadTrainData(cfg.data);
  const { transcripts } = await expertTranscripts(train, cfg);
  writeTranscripts(join(base, 't.jsonl'), transcripts);
  await ensureModel(cfg.model, 0, () => tokenizerCorpus(train, transcripts));
  sets = [
    `run.dir=${join(base, 'runs')}`,
    'run.name=sft',
    `model.path=${join(base, 'm')}`,
    `train.sft.data=${join(base, 't.jsonl')}`,
    'train.sft.steps=6',
    'train.sft.batch=4',
    'train.sft.lr=0.01',
    'rollout.maxContext=1024',
  ];
});
afterAll(async () => closeCodeSandbox());

describe('sharp sft', () => {
  it('trains model.path on train.sft.data and saves <run>/model atomically; the loss falls', async () => {
    await run({ set: sets, backend: 'wasm' });
    const runs = readdirSync(join(base, 'runs'));
    expect(runs).toHaveLength(1);
    const dir = join(base, 'runs', runs[0] as string);
    expect(readdirSync(dir).sort()).toEqual(['config.yaml', 'log.jsonl', 'model', 'sft-metrics.jsonl']);
    const m = readMetrics(join(dir, 'sft-metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual([1, 2, 3, 4, 5, 6]);
    // A random init starts near ln(350) = 5.86 nats per token; 6 steps at lr 0.01 must bring it down.
    expect(m[0]?.['sft/loss']).toBeGreaterThan(5);
    expect(m[5]?.['sft/loss'] as number).toBeLessThan((m[0]?.['sft/loss'] as number) - 0.5);
    const before = await CausalLM.load(join(base, 'm'));
    const after = await CausalLM.load(join(dir, 'model'));
    const changed = tf.tidy(() =>
      after
        .trainableVariables()
        .map((v, i) => tf.any(tf.notEqual(v, before.trainableVariables()[i] as tf.Variable)).dataSync()[0]),
    );
    expect(changed.every((c) => c === 1)).toBe(true);
    before.dispose();
    after.dispose();
  }, 60_000);

  it('--resume of a run another process holds is refused in one line; the run is left as it was', async () => {
    const dir = join(base, 'runs', readdirSync(join(base, 'runs')).find((d) => d.startsWith('sft-')) as string);
    const before = readFileSync(join(dir, 'sft-metrics.jsonl'), 'utf8');
    const other = await lockHolder(dir);
    try {
      await expect(run({ resume: dir, set: [], backend: 'wasm' })).rejects.toThrow(
        `run folder ${dir} is in use by process ${other.pid} (`,
      );
      expect(readFileSync(join(dir, 'sft-metrics.jsonl'), 'utf8')).toBe(before);
    } finally {
      other.kill('SIGKILL');
    }
  }, 60_000);

  it('a missing transcripts file is a one-line UserError', async () => {
    await expect(run({ set: [...sets, `train.sft.data=${join(base, 'none.jsonl')}`] })).rejects.toThrow(
      new UserError(`sft: train.sft.data not found: ${join(base, 'none.jsonl')}`),
    );
    writeFileSync(join(base, 'bad.jsonl'), '{"messages": [{"role": "user", "content": "x"}]}\n');
    await expect(run({ set: [...sets, `train.sft.data=${join(base, 'bad.jsonl')}`] })).rejects.toThrow(
      /bad\.jsonl:1: field 'messages\.0\.train'/,
    );
  });

  it('--resume DIR continues a killed run from its latest SFT checkpoint: the same model, each step logged once', async () => {
    const own = [...sets, 'run.name=sftres', 'train.sft.checkpointEvery=2'];
    await run({ set: own, backend: 'wasm' });
    const dir = join(base, 'runs', readdirSync(join(base, 'runs')).find((d) => d.startsWith('sftres-')) as string);
    expect((await listCheckpoints(dir, SFT_CHECKPOINTS_DIR)).map((c) => c.step)).toEqual([2, 4]);
    const straight = await CausalLM.load(join(dir, 'model'));
    // As if killed after step 5 with step 2 as the latest checkpoint: no result, stale metrics lines 3..5.
    rmSync(join(dir, 'model'), { recursive: true });
    rmSync(join(dir, SFT_CHECKPOINTS_DIR, 'step-00000004'), { recursive: true });
    const file = join(dir, 'sft-metrics.jsonl');
    writeFileSync(file, readFileSync(file, 'utf8').split('\n').slice(0, 5).join('\n') + '\n');

    await expect(run({ resume: dir, set: ['train.sft.lr=0.5'] })).rejects.toThrow(
      new UserError(
        `resume: ${join(dir, SFT_CHECKPOINTS_DIR, 'step-00000002')} was written under another config (its ` +
          `config.yaml differs from this one: a --config or --set changed it); resume with the config.yaml of ` +
          `the run (no --config, no --set), or start a new run`,
      ),
    );
    await run({ resume: dir, set: [], backend: 'wasm' });
    const log = readFileSync(join(dir, 'log.jsonl'), 'utf8');
    const resumes = log
      .split('\n')
      .filter((l) => l.includes('"msg":"resuming SFT from its latest checkpoint"'))
      .map((l) => (JSON.parse(l) as { step: number }).step);
    expect(resumes).toEqual([2]);
    expect(readMetrics(file).map((x) => x.step)).toEqual([1, 2, 3, 4, 5, 6]);
    const resumed = await CausalLM.load(join(dir, 'model'));
    expect(maxWeightDiff(straight, resumed)).toBeLessThan(1e-6);
    straight.dispose();
    resumed.dispose();
  }, 60_000);
});
