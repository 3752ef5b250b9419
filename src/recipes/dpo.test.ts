import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { configSchema } from '../config/schema.ts';
import { writePreferencePairs } from '../credit/pairs-jsonl.ts';
import type { PreferencePair } from '../credit/first-error.ts';
import { loadTrainData } from './stages/train-data.ts';
import { expertTranscripts } from './stages/expert-transcripts.ts';
import { ensureModel, tokenizerCorpus } from './stages/ensure-model.ts';
import { DPO_CHECKPOINTS_DIR, listCheckpoints } from '../train/checkpoints/checkpoint.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { maxWeightDiff } from '../../test/weights.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { UserError } from '../errors.ts';
import { run } from './dpo.ts';

let base: string;
let sets: string[];
beforeAll(async () => {
  await initBackend('wasm');
  base = mkdtempSync(join(tmpdir(), 'sharp-dpo-cmd-'));
  const cfg = configSchema.parse({
    model: {
      path: join(base, 'm'),
      init: { enabled: true, layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, vocab: 350 },
    },
    data: { synthetic: { seed: 1, train: 3, heldOut: 1, minHops: 2, maxHops: 2 } },
  });
  const { train } = loadTrainData(cfg.data);
  const { transcripts } = await expertTranscripts(train, cfg);
  await ensureModel(cfg.model, 0, () => tokenizerCorpus(train, transcripts));
  // Pairs in the credit module's format: the planner's final turn, chosen = the gold answer, rejected = a wrong one.
  const pairs: PreferencePair[] = transcripts
    .filter((t) => t.messages.at(-1)?.content.startsWith('<answer>') && t.messages.length > 3)
    .map((t, k) => ({
      prefix: t.messages.slice(0, -1).map((m) => ({ role: m.role, content: m.content })),
      chosen: t.messages.at(-1)?.content ?? '',
      rejected: '<answer>unknown</answer>',
      metadata: {
        trajectoryId: `t${k}`,
        episodeId: `e${k}`,
        messageIndex: t.messages.length - 1,
        agent: 0,
        role: 'planner',
        judge: 'rule',
        attempts: 1,
      },
    }));
  writePreferencePairs(join(base, 'pairs.jsonl'), pairs);
  sets = [
    `run.dir=${join(base, 'runs')}`,
    'run.name=dpo',
    `model.path=${join(base, 'm')}`,
    `train.dpo.data=${join(base, 'pairs.jsonl')}`,
    'train.dpo.steps=4',
    'train.dpo.batch=2',
    'train.dpo.lr=0.003',
    'train.dpoBeta=0.5',
    'rollout.maxContext=1024',
  ];
});
afterAll(async () => closeCodeSandbox());

describe('sharp dpo', () => {
  it('trains on train.dpo.data against a frozen reference and saves <run>/model', async () => {
    await run({ set: sets, backend: 'wasm' });
    const runs = readdirSync(join(base, 'runs'));
    const dir = join(base, 'runs', runs[0] as string);
    expect(readdirSync(dir).sort()).toEqual(['config.yaml', 'dpo-metrics.jsonl', 'log.jsonl', 'model']);
    expect(readdirSync(join(dir, 'model'))).toEqual(
      expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']),
    );
    const m = readMetrics(join(dir, 'dpo-metrics.jsonl'));
    expect(m.map((x) => x.step)).toEqual([1, 2, 3, 4]);
    // Step 1: policy = reference, so every margin is 0 and the loss is -log sigmoid(0) = ln 2 = 0.693147.
    expect(m[0]?.['dpo/loss'] as number).toBeCloseTo(Math.LN2, 5);
    expect(m[3]?.['dpo/loss'] as number).toBeLessThan(Math.LN2);
  }, 60_000);

  it(
    'with train.lora trains adapters only against the base (adapters disabled), saves them apart and the model ' +
      'merged',
    async () => {
      await run({
        set: [
          ...sets.map((x) => (x === 'run.name=dpo' ? 'run.name=dpo-lora' : x)),
          'train.lora.rank=4',
          'train.lora.alpha=8',
        ],
        backend: 'wasm',
      });
      const dir = join(base, 'runs', readdirSync(join(base, 'runs')).find((r) => r.startsWith('dpo-lora')) as string);
      expect(readdirSync(join(dir, 'adapter')).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
      const m = readMetrics(join(dir, 'dpo-metrics.jsonl'));
      expect(m[0]?.['dpo/loss'] as number).toBeCloseTo(Math.LN2, 5); // fresh adapters: policy = base = reference
      expect(m[3]?.['dpo/loss'] as number).toBeLessThan(Math.LN2);
      const adapted = await CausalLM.load(join(dir, 'adapter')); // base: model.path
      const merged = await CausalLM.load(join(dir, 'model'));
      const start = await CausalLM.load(join(base, 'm'));
      const baseDiff = (a: CausalLM): number =>
        Math.max(
          ...[...a.baseVariables()].map(([n, v]) =>
            Math.max(
              ...Array.from(v.dataSync(), (x, i) =>
                Math.abs(x - ((start.baseVariables().get(n) as typeof v).dataSync()[i] as number)),
              ),
            ),
          ),
        );
      expect(baseDiff(adapted)).toBe(0); // the base never moved
      expect(baseDiff(merged)).toBeGreaterThan(0); // the merged model holds the update
      [adapted, merged, start].forEach((x) => x.dispose());
    },
    120_000,
  );

  it('a missing pairs key is a one-line UserError', async () => {
    await expect(run({ set: sets.filter((s) => !s.startsWith('train.dpo.data')) })).rejects.toThrow(
      new UserError('dpo: train.dpo.data (preference pairs JSONL) is required'),
    );
  });

  it('--resume DIR continues a killed run from its latest DPO checkpoint: the same model, each step logged once', async () => {
    const own = [...sets, 'run.name=dpores', 'train.dpo.checkpointEvery=2'];
    await run({ set: own, backend: 'wasm' });
    const dir = join(base, 'runs', readdirSync(join(base, 'runs')).find((d) => d.startsWith('dpores-')) as string);
    expect((await listCheckpoints(dir, DPO_CHECKPOINTS_DIR)).map((c) => c.step)).toEqual([2]);
    const straight = await CausalLM.load(join(dir, 'model'));
    // As if killed after step 3: no result, metrics up to step 3 (the step-2 checkpoint is the latest).
    rmSync(join(dir, 'model'), { recursive: true });
    const file = join(dir, 'dpo-metrics.jsonl');
    writeFileSync(file, readFileSync(file, 'utf8').split('\n').slice(0, 3).join('\n') + '\n');

    await expect(run({ resume: dir, set: ['train.dpo.lr=0.5'] })).rejects.toThrow(
      new UserError(
        `resume: ${join(dir, DPO_CHECKPOINTS_DIR, 'step-00000002')} was written under another config (its ` +
          `config.yaml differs from this one: a --config or --set changed it); resume with the config.yaml of ` +
          `the run (no --config, no --set), or start a new run`,
      ),
    );
    await run({ resume: dir, set: [], backend: 'wasm' });
    const log = readFileSync(join(dir, 'log.jsonl'), 'utf8');
    const resumes = log
      .split('\n')
      .filter((l) => l.includes('"msg":"resuming DPO from its latest checkpoint"'))
      .map((l) => (JSON.parse(l) as { step: number }).step);
    expect(resumes).toEqual([2]);
    expect(readMetrics(file).map((x) => x.step)).toEqual([1, 2, 3, 4]);
    const resumed = await CausalLM.load(join(dir, 'model'));
    expect(maxWeightDiff(straight, resumed)).toBeLessThan(1e-6);
    straight.dispose();
    resumed.dispose();
  }, 60_000);
});
