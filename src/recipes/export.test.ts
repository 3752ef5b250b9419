import * as tf from '@tensorflow/tfjs';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS } from '../model/io/peft.ts';
import { listCheckpoints } from '../train/checkpoints/checkpoint.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { expectLoadable, microConfig, onlyRun, sharp as sharpIn } from '../../test/cli-helpers.ts';

/**
 * `sharp train` with train.lora on the quickstart's synthetic world, end to end, then `sharp export` of its adapters.
 */
let root: string;
const sharp = (args: string[]) => sharpIn(root, args);
const REPO = join(import.meta.dirname, '../..');
const MODEL = join(REPO, 'models/sharp-tiny-sft');

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sharp-export-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function logits(m: CausalLM): Float32Array {
  // [1, 6, V]
  return tf.tidy(() => m.forward(tf.tensor2d([[5, 17, 3, 99, 42, 7]], [1, 6], 'int32')).dataSync() as Float32Array);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

describe('sharp train with train.lora, then sharp export', () => {
  it(
    'SFT then GRPO (KL to the base) on the quickstart world: adapters checkpointed in PEFT layout, the SFT model ' +
      'saved merged',
    async () => {
      const cfg = microConfig(root, 'lora', 2);
      const lora = [
        '--set',
        'train.lora.rank=4',
        '--set',
        'train.lora.alpha=8',
        '--set',
        'train.lora.targets=[q_proj, v_proj, up_proj, down_proj]',
        '--set',
        'train.klBeta=0.05',
        '--set',
        'train.logprobChunk=64',
        '--set',
        'train.checkpointLayers=true',
      ];
      const r = await sharp(['train', '--config', cfg, ...lora]);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/accuracy: SFT only \d\.\d\d .* -> after RL \d\.\d\d /m);
      const run = onlyRun(join(root, 'runs'));
      // SFT: the merged model (GRPO's starting point and reference) and its adapters apart.
      expect(existsSync(join(run, 'sft-model/config.json'))).toBe(true);
      expect(existsSync(join(run, 'sft-adapter', ADAPTER_CONFIG))).toBe(true);
      // GRPO checkpoints: adapters, their AdamW state and the trainer state; no model weights.
      const cks = await listCheckpoints(run);
      expect(cks.map((c) => c.step)).toEqual([1, 2]);
      for (const c of cks) {
        expect(existsSync(join(c.dir, ADAPTER_WEIGHTS)), c.dir).toBe(true);
        expect(existsSync(join(c.dir, 'model.safetensors')), c.dir).toBe(false);
        expect(existsSync(join(c.dir, 'tokenizer.json')), c.dir).toBe(true);
      }
      expect(await expectLoadable(run)).toEqual([1, 2]);
      const cfgJson = JSON.parse(readFileSync(join((cks[1] as { dir: string }).dir, ADAPTER_CONFIG), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(cfgJson).toMatchObject({
        peft_type: 'LORA',
        r: 4,
        lora_alpha: 8,
        target_modules: ['q_proj', 'v_proj', 'up_proj', 'down_proj'],
        base_model_name_or_path: join(run, 'sft-model'),
      });
      expect(readMetrics(join(run, 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2]);
      const sftBase = await CausalLM.load(join(run, 'sft-model'));
      // base: the model SFT started from, + the SFT adapters
      const sftAdapted = await CausalLM.load(join(run, 'sft-adapter'));
      expect(sftAdapted.lora?.settings.rank).toBe(4);
      // the saved SFT model is base + adapters merged
      expect(maxAbsDiff(logits(sftAdapted), logits(sftBase))).toBeLessThan(1e-5);
      [sftBase, sftAdapted].forEach((x) => x.dispose());
    },
    300_000,
  );

  it(
    'GRPO from the shipped starting policy moves the adapters only; sharp export writes them merged (logits equal, ' +
      '1e-5) and alone',
    async () => {
      const sets = [
        `run.dir=${join(root, 'qs-runs')}`,
        `model.path=${MODEL}`,
        'train.steps=1',
        'train.batchQuestions=2',
        'train.checkpointEvery=1',
        'rollout.groupSize=8',
        'data.synthetic.train=16',
        'data.synthetic.heldOut=2',
        'train.lr=0.01',
        'train.lora.rank=8',
        'train.lora.alpha=16',
        'train.klBeta=0.02',
        'train.logprobChunk=128',
      ];
      const r = await sharp([
        'train',
        '--config',
        join(REPO, 'configs/quickstart.yaml'),
        ...sets.flatMap((s) => ['--set', s]),
      ]);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.code).toBe(0);
      const run = onlyRun(join(root, 'qs-runs'));
      const cks = await listCheckpoints(run);
      expect(cks.map((c) => c.step)).toEqual([1]);
      const metrics = readMetrics(join(run, 'metrics.jsonl'));
      // the step had a gradient
      expect(metrics[0]?.['groups/skipped']).toBeLessThan(metrics[0]?.['groups/total'] as number);

      // The adapters load back through the PEFT layout onto their base, and they moved; the base did not.
      const last = (cks[0] as { dir: string }).dir;
      expect(JSON.parse(readFileSync(join(last, ADAPTER_CONFIG), 'utf8'))).toMatchObject({
        peft_type: 'LORA',
        r: 8,
        lora_alpha: 16,
        base_model_name_or_path: MODEL,
      });
      const adapted = await CausalLM.load(last);
      expect(adapted.lora?.settings).toMatchObject({ rank: 8, alpha: 16 });
      const base = await CausalLM.load(MODEL);
      expect(maxAbsDiff(logits(adapted), logits(base))).toBeGreaterThan(1e-4);
      for (const [n, v] of base.baseVariables())
        expect(Array.from((adapted.baseVariables().get(n) as tf.Variable).dataSync()), n).toEqual(
          Array.from(v.dataSync()),
        );

      // sharp export --merge: a whole Hugging Face checkpoint whose logits are base + adapters (1e-5).
      const merged = join(root, 'merged');
      const e1 = await sharp(['export', '--model', last, '--out', merged, '--merge']);
      expect(e1.stderr).toBe('');
      expect(e1.code).toBe(0);
      expect(e1.stdout).toMatch(/^export: wrote a merged Hugging Face checkpoint \([\d,]+ parameters, F32\) to /);
      for (const f of ['config.json', 'model.safetensors', 'tokenizer.json'])
        expect(existsSync(join(merged, f)), f).toBe(true);
      expect(existsSync(join(merged, ADAPTER_CONFIG))).toBe(false);
      const m = await CausalLM.load(merged);
      expect(m.lora).toBeUndefined();
      // 1e-5 relative to the logits' scale: x (W + s B A) and x W + s (x A) B round differently in float32.
      const want = logits(adapted);
      expect(maxAbsDiff(logits(m), want) / Math.max(1, ...Array.from(want, Math.abs))).toBeLessThan(1e-5);

      // sharp export: the adapters alone in PEFT's layout, loadable on their own.
      const alone = join(root, 'adapter');
      const e2 = await sharp(['export', '--model', last, '--out', alone]);
      expect(e2.code).toBe(0);
      expect(existsSync(join(alone, 'optimizer.safetensors'))).toBe(false);
      const back = await CausalLM.load(alone);
      expect(maxAbsDiff(logits(back), logits(adapted))).toBe(0);

      // Bad input: one line, exit 2.
      const bad = await sharp(['export', '--model', merged, '--out', join(root, 'x'), '--merge']);
      expect(bad.code).toBe(2);
      expect(bad.stderr.trim().split('\n')).toEqual([
        `sharp: export: --model ${merged} is a whole model (config.json), not LoRA adapters: there is nothing to merge`,
      ]);
      [adapted, base, m, back].forEach((x) => x.dispose());
    },
    300_000,
  );
});
