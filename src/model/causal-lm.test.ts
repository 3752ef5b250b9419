import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor, type BuildOptions } from './config.ts';
import { readSafetensors, readWeights, writeSafetensors } from './io/safetensors.ts';
import { referenceLogits } from '../../test/reference/forward.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TINY = resolve(repoRoot, '../shared/models/tinystories-260k');

const QWEN3: BuildOptions = {
  arch: 'qwen3',
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 2,
  headDim: 24,
  intermediate: 96,
  vocab: 97,
  tieEmbeddings: false,
  ropeTheta: 1e6,
};
const QWEN2: BuildOptions = {
  arch: 'qwen2',
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 1,
  intermediate: 80,
  vocab: 101,
  tieEmbeddings: true,
};

let dir: string;
beforeAll(async () => {
  await initBackend('wasm');
  dir = await mkdtemp(join(tmpdir(), 'sharp-model-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function logitsOf(m: CausalLM, rows: number[][], mask?: number[][]): Float32Array {
  return tf.tidy(() => {
    const b = rows.length;
    const t = (rows[0] as number[]).length;
    const ids = tf.tensor2d(rows.flat(), [b, t], 'int32');
    const am = mask ? tf.tensor2d(mask.flat(), [b, t], 'int32') : undefined;
    return m.forward(ids, am).dataSync() as Float32Array; // [B, T, V]
  });
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs((a[i] as number) - (b[i] as number)));
  return d;
}

/** Random-init qwen2 and qwen3 models (biases and q/k norms perturbed so they matter). */
function randomModel(o: BuildOptions, seed: number): CausalLM {
  const m = CausalLM.random(hfConfigFor(o), seed);
  // Biases start at 0 and norm gains at 1: move them so a dropped bias or norm changes the logits.
  for (const [name, v] of m.namedVariables()) {
    if (/bias$|norm\.weight$/.test(name))
      tf.tidy(() => v.assign(tf.add(v, tf.mul(0.3, tf.sin(tf.range(1, v.size + 1).reshape(v.shape))))));
  }
  return m;
}

describe('CausalLM against the float64 reference', () => {
  for (const [label, o] of [
    ['qwen3 (q/k norm, GQA 4:2, head_dim 24, untied)', QWEN3],
    ['qwen2 (qkv bias, GQA 4:1, tied)', QWEN2],
  ] as const) {
    it(`${label}: logits match to 1e-4, and match again after save + load`, async () => {
      const m = randomModel(o, 7);
      const ids = [3, 17, 42, 5, 96, 0, 11, 64];
      const before = logitsOf(m, [ids]);
      const sub = join(dir, o.arch);
      await m.save(sub);
      const ref = referenceLogits(m.config, await readWeights(sub), ids);
      expect(
        maxAbsDiff(
          before,
          ref.flatMap((r) => Array.from(r)),
        ),
      ).toBeLessThan(1e-4);
      const back = await CausalLM.load(sub);
      expect(back.config).toEqual(m.config);
      // Identical weights and the same kernels: bit-identical logits.
      expect(maxAbsDiff(logitsOf(back, [ids]), before)).toBe(0);
      m.dispose();
      back.dispose();
    });
  }

  it.skipIf(!existsSync(TINY))('tinystories-260k (llama): logits match the reference to 1e-4', async () => {
    const m = await CausalLM.load(TINY);
    const ids = [1, 403, 407, 261, 378, 432, 383];
    const ref = referenceLogits(m.config, await readWeights(TINY), ids);
    expect(
      maxAbsDiff(
        logitsOf(m, [ids]),
        ref.flatMap((r) => Array.from(r)),
      ),
    ).toBeLessThan(1e-4);
    // The reference itself must predict the known greedy continuation: ", there" after "Once upon a time".
    const last = ref[4] as Float64Array;
    expect(last.indexOf(Math.max(...last))).toBe(432);
    m.dispose();
  });
});

describe('padding', () => {
  it('left and right padding give the unpadded logits at real positions', () => {
    const m = randomModel(QWEN3, 3);
    const v = m.config.vocabSize;
    const seq = [5, 9, 13, 2, 77];
    const alone = logitsOf(m, [seq]);
    const left = logitsOf(
      m,
      [
        [0, 0, ...seq],
        [1, 2, 3, 4, 5, 6, 7],
      ],
      [
        [0, 0, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 1, 1],
      ],
    );
    const right = logitsOf(
      m,
      [
        [...seq, 0, 0],
        [1, 2, 3, 4, 5, 6, 7],
      ],
      [
        [1, 1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 1, 1, 1],
      ],
    );
    expect(maxAbsDiff(left.slice(2 * v, 7 * v), alone)).toBeLessThan(1e-5);
    expect(maxAbsDiff(right.slice(0, 5 * v), alone)).toBeLessThan(1e-5);
    m.dispose();
  });
});

describe('checkpoint errors', () => {
  it('a missing tensor and a wrong shape give one-line errors naming the tensor', async () => {
    const m = randomModel(QWEN2, 1);
    const sub = join(dir, 'bad');
    await m.save(sub);
    m.dispose();
    const file = join(sub, 'model.safetensors');
    const good = await readSafetensors(file);
    const missing = new Map(good);
    missing.delete('model.layers.1.self_attn.k_proj.bias');
    await writeSafetensors(file, missing);
    const e1 = await CausalLM.load(sub).then(
      () => new Error('loaded'),
      (e: unknown) => e as Error,
    );
    expect(e1).toBeInstanceOf(Error);
    expect(e1.message).toContain("'model.layers.1.self_attn.k_proj.bias' is missing");
    expect(e1.message).not.toContain('\n');

    const wrong = new Map(good);
    wrong.set('model.layers.0.mlp.up_proj.weight', { dtype: 'F32', shape: [64, 80], data: new Float32Array(64 * 80) });
    await writeSafetensors(file, wrong);
    const e2 = await CausalLM.load(sub).then(
      () => new Error('loaded'),
      (e: unknown) => e as Error,
    );
    expect(e2.message).toContain(
      "'model.layers.0.mlp.up_proj.weight' has shape [64, 80], config.json implies [80, 64]",
    );
    expect(e2.message).not.toContain('\n');

    const extra = new Map(good);
    extra.set('model.layers.0.self_attn.q_norm.weight', { dtype: 'F32', shape: [16], data: new Float32Array(16) });
    await writeSafetensors(file, extra);
    const e3 = await CausalLM.load(sub).then(
      () => new Error('loaded'),
      (e: unknown) => e as Error,
    );
    expect(e3.message).toContain("unexpected tensor 'model.layers.0.self_attn.q_norm.weight'");

    await writeFile(join(sub, 'config.json'), JSON.stringify({ ...hfConfigFor(QWEN2), model_type: 'gpt2' }));
    await expect(CausalLM.load(sub)).rejects.toThrow(/model_type/);
  });
});

describe('variables', () => {
  it('trainableVariables: stable HF order, dispose frees every Variable', () => {
    const before = tf.memory().numTensors;
    const m = randomModel(QWEN3, 2);
    const names = m.trainableVariables().map((v) => v.name.replace(/^lm\d+\//, ''));
    expect(names[0]).toBe('model.embed_tokens.weight');
    expect(names).toContain('model.layers.1.self_attn.k_norm.weight');
    expect(names.at(-1)).toBe('lm_head.weight');
    // embed + 2 x (2 norms + q,k,v,o + q/k norm + gate,up,down) + norm + head
    expect(names.length).toBe(1 + 2 * 11 + 2);
    // q_proj is stored [in, out] = [hidden, heads * head_dim].
    expect(m.namedVariables().get('model.layers.0.self_attn.q_proj.weight')?.shape).toEqual([64, 96]);
    m.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('same seed, same weights; different seed, different weights', () => {
    const a = CausalLM.random(hfConfigFor(QWEN2), 5);
    const b = CausalLM.random(hfConfigFor(QWEN2), 5);
    const c = CausalLM.random(hfConfigFor(QWEN2), 6);
    const w = (m: CausalLM): Float32Array => m.trainableVariables()[0]?.dataSync() as Float32Array;
    expect(maxAbsDiff(w(a), w(b))).toBe(0);
    expect(maxAbsDiff(w(a), w(c))).toBeGreaterThan(0);
    // N(0, 0.02): the sample std of 101 x 64 values is within 5% of 0.02.
    const x = w(a);
    const std = Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
    expect(Math.abs(std - 0.02)).toBeLessThan(0.001);
    [a, b, c].forEach((m) => m.dispose());
  });
});
