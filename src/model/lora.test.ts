import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor, type BuildOptions } from './config.ts';
import { readSafetensors } from './io/safetensors.ts';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS, readPeftConfig } from './io/peft.ts';
import { LORA_TARGETS, loraSites, peftName, type LoraSettings } from './lora.ts';
import { INFER_OPS, TRAIN_OPS } from './ops/op-set.ts';
import { project } from './project.ts';
import { testBackend } from '../../test/backend.ts';

const QWEN3: BuildOptions = {
  arch: 'qwen3',
  layers: 2,
  hidden: 32,
  heads: 4,
  kvHeads: 2,
  intermediate: 48,
  vocab: 53,
  tieEmbeddings: false,
};
const QWEN2: BuildOptions = {
  arch: 'qwen2',
  layers: 2,
  hidden: 32,
  heads: 4,
  kvHeads: 2,
  intermediate: 40,
  vocab: 47,
  tieEmbeddings: true,
};
const ALL: LoraSettings = { rank: 4, alpha: 8, dropout: 0, targets: [...LORA_TARGETS] };
const IDS = [
  [3, 9, 1, 22, 7, 5],
  [0, 0, 4, 17, 2, 30],
];
const MASK = [
  [1, 1, 1, 1, 1, 1],
  [0, 0, 1, 1, 1, 1],
];

let dir: string;
beforeAll(async () => {
  await initBackend(testBackend());
  dir = await mkdtemp(join(tmpdir(), 'sharp-lora-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function logits(m: CausalLM): Float32Array {
  return tf.tidy(
    () =>
      m
        .forward(tf.tensor2d(IDS.flat(), [2, 6], 'int32'), tf.tensor2d(MASK.flat(), [2, 6], 'int32'))
        .dataSync() as Float32Array,
  ); // [2, 6, V]
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

/** Gives every adapter B matrix seeded nonzero values, so the adapters change the outputs. */
function perturbB(m: CausalLM, seed: number): void {
  let k = seed;
  for (const [name, v] of m.namedVariables()) {
    if (!name.endsWith('lora_B.weight')) continue;
    const vals = Float32Array.from(
      { length: v.size },
      () => ((k = (k * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.2,
    );
    tf.tidy(() => v.assign(tf.tensor(vals, v.shape)));
  }
}

describe('LoRA projection', () => {
  it('matches a hand-computed y = x W^T + (alpha / r) x A^T B^T, on both op sets', () => {
    // x [1, 2]; W [out 2, in 2] = [[1, 2], [3, 4]] stored [in, out]; A [r 1, in 2] = [[0.5, -1]]; B [out 2, r 1] =
    // [[2], [-3]]; alpha 3, r 1. x = [1, 2]: x W^T = [1 + 4, 3 + 8] = [5, 11]; x A^T = 0.5 - 2 = -1.5; (x A^T) B^T =
    // [-3, 4.5]; * 3 -> [-9, 13.5]; y = [-4, 24.5].
    const w = new Map<string, tf.Tensor>([
      ['W', tf.tensor2d([1, 3, 2, 4], [2, 2])], // stored [in, out]
      ['A', tf.tensor2d([0.5, -1], [2, 1])], // stored [in, r]
      ['B', tf.tensor2d([2, -3], [1, 2])], // stored [r, out]
    ]);
    const get = (n: string): tf.Tensor => w.get(n) as tf.Tensor;
    const x = tf.tensor2d([1, 2], [1, 2]); // [1, 2]
    const lookup = (n: string) => (n === 'W' ? { a: 'A', b: 'B', scale: 3, dropout: 0, seed: 0 } : undefined);
    for (const ops of [TRAIN_OPS, INFER_OPS]) {
      expect(Array.from(project(ops, x, get, 'W', undefined, lookup).dataSync())).toEqual([-4, 24.5]);
      // not adapted: x W^T + b
      expect(Array.from(project(ops, x, get, 'W', tf.tensor1d([1, 1]), undefined).dataSync())).toEqual([6, 12]);
    }
    tf.dispose([...w.values(), x]);
  });

  it('dropout scales the kept adapter inputs by 1 / (1 - p) and reuses its mask for one seed', () => {
    const get = (n: string): tf.Tensor =>
      n === 'W' ? tf.zeros([4, 1]) : n === 'A' ? tf.ones([4, 1]) : tf.ones([1, 1]);
    const x = tf.ones([64, 4]) as tf.Tensor2D; // [64, 4]
    const lookup = () => ({ a: 'A', b: 'B', scale: 1, dropout: 0.5, seed: 42 });
    const y = Array.from(project(TRAIN_OPS, x, get, 'W', undefined, lookup).dataSync()); // each row: 2 * (kept of 4)
    expect(y.every((v) => [0, 2, 4, 6, 8].includes(v))).toBe(true);
    expect(new Set(y).size).toBeGreaterThan(1);
    expect(Array.from(project(TRAIN_OPS, x, get, 'W', undefined, lookup).dataSync())).toEqual(y);
    x.dispose();
  });
});

describe('LoRA adapters on CausalLM', () => {
  for (const o of [QWEN3, QWEN2]) {
    it(
      `${o.arch}: fresh adapters (B = 0) leave the logits identical; A is PEFT's Kaiming-uniform; only adapters ` +
        `train`,
      () => {
        const m = CausalLM.random(hfConfigFor(o), 3);
        const base = logits(m);
        const baseVars = m.trainableVariables().length;
        const lora = m.attachLora(ALL, 11);
        expect(maxAbsDiff(logits(m), base)).toBe(0);
        expect(lora.sites).toHaveLength(7 * 2);
        expect(lora.scale).toBe(2);
        const trainable = m.trainableVariables();
        expect(trainable).toHaveLength(7 * 2 * 2);
        expect(trainable.length).not.toBe(baseVars);
        for (const s of lora.sites) {
          const a = (m.namedVariables().get(s.a) as tf.Variable).dataSync();
          const b = (m.namedVariables().get(s.b) as tf.Variable).dataSync();
          expect(a.length).toBe(4 * s.in);
          const bound = 1 / Math.sqrt(s.in);
          expect(Math.max(...Array.from(a, Math.abs))).toBeLessThanOrEqual(bound);
          expect(Math.max(...Array.from(a, Math.abs))).toBeGreaterThan(bound * 0.5);
          expect(Array.from(b).every((v) => v === 0)).toBe(true);
        }
        m.dispose();
      },
    );
  }

  it('uses PEFT tensor names and shapes', () => {
    const m = CausalLM.random(hfConfigFor(QWEN3), 3);
    const sites = loraSites(m.config, ['q_proj', 'down_proj']);
    expect(sites.map((s) => s.a)).toEqual([
      'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight',
      'base_model.model.model.layers.0.mlp.down_proj.lora_A.weight',
      'base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight',
      'base_model.model.model.layers.1.mlp.down_proj.lora_A.weight',
    ]);
    expect(peftName('model.layers.3.self_attn.v_proj.weight', 'B')).toBe(
      'base_model.model.model.layers.3.self_attn.v_proj.lora_B.weight',
    );
    expect(sites.map((s) => [s.in, s.out])).toEqual([
      [32, 32],
      [48, 32],
      [32, 32],
      [48, 32],
    ]);
    m.dispose();
  });

  it(
    'trained adapters change the logits; the generation path (forwardCached) agrees; baseView is the base without a ' +
      'copy',
    () => {
      const m = CausalLM.random(hfConfigFor(QWEN3), 4);
      const base = logits(m);
      m.attachLora({ ...ALL, targets: ['q_proj', 'v_proj', 'up_proj'] }, 1);
      perturbB(m, 7);
      const adapted = logits(m);
      expect(maxAbsDiff(adapted, base)).toBeGreaterThan(1e-3);
      const cached = tf.tidy(() => {
        const ids = tf.tensor2d(IDS.flat(), [2, 6], 'int32');
        const mask = tf.tensor2d(MASK.flat(), [2, 6], 'int32');
        const pos = tf.maximum(tf.sub(tf.cumsum(tf.cast(mask, 'float32'), 1), 1), 0) as tf.Tensor2D;
        const out = m.forwardCached(ids, pos, mask, undefined, false);
        const l = out.logits.dataSync() as Float32Array;
        tf.dispose(out.kv.flatMap((kv) => [kv.k, kv.v]));
        return l;
      });
      expect(maxAbsDiff(cached as Float32Array, adapted)).toBeLessThan(1e-5);
      const before = tf.memory().numTensors;
      const view = m.baseView();
      expect(tf.memory().numTensors).toBe(before);
      expect(maxAbsDiff(logits(view), base)).toBe(0);
      view.dispose();
      expect(maxAbsDiff(logits(m), adapted)).toBe(0); // the view's dispose freed nothing
      m.dispose();
    },
  );

  it('saves and loads the PEFT layout: adapter_config.json, adapter_model.safetensors, values round-trip exactly', async () => {
    const baseDir = join(dir, 'base');
    const m0 = CausalLM.random(hfConfigFor(QWEN3), 5);
    await m0.save(baseDir);
    m0.dispose();
    const m = await CausalLM.load(baseDir);
    m.attachLora({ rank: 2, alpha: 16, dropout: 0.05, targets: ['q_proj', 'k_proj', 'o_proj', 'gate_proj'] }, 9);
    perturbB(m, 3);
    const adapted = logits(m);
    const out = join(dir, 'adapter');
    await m.saveAdapters(out);
    expect(existsSync(join(out, 'config.json'))).toBe(false);
    const cfg = JSON.parse(await readFile(join(out, ADAPTER_CONFIG), 'utf8')) as Record<string, unknown>;
    expect(cfg).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 2,
      lora_alpha: 16,
      lora_dropout: 0.05,
      bias: 'none',
      target_modules: ['q_proj', 'k_proj', 'o_proj', 'gate_proj'],
      base_model_name_or_path: baseDir,
      use_dora: false,
      use_rslora: false,
    });
    const tensors = await readSafetensors(join(out, ADAPTER_WEIGHTS));
    expect(tensors.size).toBe(2 * 4 * 2);
    const qa = tensors.get('base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight');
    expect(qa?.shape).toEqual([2, 32]); // A [r, in] in HF layout
    // B [out, r]
    expect(tensors.get('base_model.model.model.layers.0.mlp.gate_proj.lora_B.weight')?.shape).toEqual([48, 2]);
    // HF layout is the transpose of the stored [in, r] Variable.
    const stored = (
      m.namedVariables().get('base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight') as tf.Variable
    ).arraySync() as number[][];
    expect(qa?.data[1 * 32 + 5]).toBe(stored[5]?.[1]);

    const back = await CausalLM.load(out); // base from base_model_name_or_path, adapters attached
    expect(back.lora?.settings).toEqual({
      rank: 2,
      alpha: 16,
      dropout: 0.05,
      targets: ['q_proj', 'k_proj', 'o_proj', 'gate_proj'],
      rslora: false,
    });
    expect(maxAbsDiff(logits(back), adapted)).toBe(0);
    for (const [name, v] of m.namedVariables())
      expect(Array.from((back.namedVariables().get(name) as tf.Variable).dataSync())).toEqual(Array.from(v.dataSync()));
    back.dispose();
    m.dispose();
    expect((await readPeftConfig(out)).settings.rank).toBe(2);
  });

  it('merged save equals base + adapters (1e-5) and loads as a plain Hugging Face model', async () => {
    const m = CausalLM.random(hfConfigFor(QWEN2), 6);
    m.attachLora(ALL, 2);
    perturbB(m, 5);
    const adapted = logits(m);
    const out = join(dir, 'merged');
    await m.save(out);
    expect(existsSync(join(out, ADAPTER_CONFIG))).toBe(false);
    const merged = await CausalLM.load(out);
    expect(merged.lora).toBeUndefined();
    expect(maxAbsDiff(logits(merged), adapted)).toBeLessThan(1e-5);
    merged.dispose();
    m.dispose();
  });

  it('refuses PEFT configs it cannot honour, in one line naming the field', async () => {
    const m = CausalLM.random(hfConfigFor(QWEN3), 7);
    m.attachLora({ ...ALL, targets: ['q_proj'] }, 1);
    const out = join(dir, 'bad');
    await m.saveAdapters(out, { base: join(dir, 'base') });
    m.dispose();
    const good = JSON.parse(await readFile(join(out, ADAPTER_CONFIG), 'utf8')) as Record<string, unknown>;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ use_dora: true }, /field 'use_dora' is true/],
      [{ target_modules: ['q_proj', 'lm_head'] }, /field 'target_modules' names 'lm_head'/],
      [{ rank_pattern: { q_proj: 8 } }, /field 'rank_pattern' is set/],
      [{ peft_type: 'IA3' }, /field 'peft_type' is "IA3"/],
      [{ r: 3 }, /lora_A.weight' has shape \[4, 32\], r 3 and the base model imply \[3, 32\]/],
    ];
    for (const [patch, want] of cases) {
      await writeFile(join(out, ADAPTER_CONFIG), JSON.stringify({ ...good, ...patch }));
      await expect(CausalLM.load(out)).rejects.toThrow(want);
    }
  });
});
