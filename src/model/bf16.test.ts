import * as tf from '@tensorflow/tfjs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { bf16MatMul, bf16Ready, packBf16, unpackBf16, unpackTensor } from './bf16.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor } from './config.ts';
import { readSafetensors } from './io/safetensors.ts';
import { testBackend } from '../../test/backend.ts';

/**
 * Frozen bfloat16 base weights: the host packing rounds to nearest even (hand-picked values), the
 * native product and decode equal float32 ones on the decoded weights, and a LoRA model with a
 * bfloat16 base gives the logits, adapter gradients and merged export of the float32 model whose
 * weights hold the same rounded values.
 */
await initBackend(testBackend());
const ready = bf16Ready();

const bits = (x: number): number => new Uint32Array(new Float32Array([x]).buffer)[0] as number;
const halves = (p: Int32Array): number[] => Array.from(new Uint16Array(p.buffer, p.byteOffset, p.length * 2));

describe('packBf16 / unpackBf16', () => {
  it('rounds to nearest, ties to even, and keeps signs, infinities and NaN', () => {
    // 1 + 2^-8 is halfway between bf16 1.0 (0x3f80) and 1 + 2^-7 (0x3f81): ties to the even 0x3f80;
    // 1 + 3 * 2^-8 is halfway between 0x3f81 and 0x3f82: to the even 0x3f82; 1 + 2^-8 + 2^-20 rounds up.
    const x = new Float32Array([1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2.5, Infinity, -0, NaN]);
    const p = packBf16(x);
    expect(p.length).toBe(4);
    const h = halves(p);
    expect(h.slice(0, 7)).toEqual([0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc020, 0x7f80, 0x8000]);
    const back = unpackBf16(p);
    expect(Array.from(back.slice(0, 7))).toEqual([1, 1, 1 + 2 ** -6, 1 + 2 ** -7, -2.5, Infinity, -0]);
    expect(Number.isNaN(back[7])).toBe(true);
    // a value bf16 holds exactly packs exactly
    expect(bits(back[3] as number)).toBe(0x3f810000);
    expect(() => packBf16(new Float32Array(3))).toThrow(/even number of values, got 3/);
  });
});

describe.skipIf(!ready)('the bfloat16 kernels', () => {
  it('multiply a float32 matrix by a packed one like tf.matMul by the decoded one, both orientations, and the gradient', () => {
    const before = tf.memory().numTensors;
    tf.tidy(() => {
      const a = tf.randomNormal([37, 48], 0, 1, 'float32', 1) as tf.Tensor2D; // [M, K]
      const wf = tf.randomNormal([48, 130], 0, 1, 'float32', 2) as tf.Tensor2D; // [K, N]
      const packed = tf.tensor(packBf16(wf.dataSync() as Float32Array), [48, 65], 'int32') as tf.Tensor2D; // [K, N/2]
      const decoded = tf.tensor(unpackBf16(packed.dataSync() as Int32Array), [48, 130]) as tf.Tensor2D; // [K, N]
      expect(Array.from(unpackTensor(packed).dataSync())).toEqual(Array.from(decoded.dataSync()));
      const ref = tf.matMul(a, decoded); // [M, N]
      const got = bf16MatMul(a, packed, false); // [M, N]
      expect(got.shape).toEqual([37, 130]);
      const gap = (x: tf.Tensor, y: tf.Tensor): number => tf.max(tf.abs(tf.sub(x, y))).dataSync()[0] as number;
      expect(gap(got, ref)).toBeLessThan(1e-4);
      // transposed: the packed matrix [N, K] ([V, D] of a tied head); a decode step's few rows too
      const wt = tf.randomNormal([300, 48], 0, 1, 'float32', 3) as tf.Tensor2D; // [N, K]
      const pt = tf.tensor(packBf16(wt.dataSync() as Float32Array), [300, 24], 'int32') as tf.Tensor2D; // [N, K/2]
      const dt = tf.tensor(unpackBf16(pt.dataSync() as Int32Array), [300, 48]) as tf.Tensor2D; // [N, K]
      for (const rows of [3, 37]) {
        const ar = tf.slice(a, [0, 0], [rows, 48]) as tf.Tensor2D; // [rows, K]
        expect(gap(bf16MatMul(ar, pt, true), tf.matMul(ar, dt, false, true))).toBeLessThan(1e-4);
      }
      // d/da sum(c * a op(B)) = c op(B)^T
      const c = tf.randomNormal([37, 130], 0, 1, 'float32', 4); // [M, N]
      const ga = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(bf16MatMul(x as tf.Tensor2D, packed, false), c)))(a);
      const gr = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x as tf.Tensor2D, decoded), c)))(a);
      expect(gap(ga, gr)).toBeLessThan(1e-4);
    });
    expect(tf.memory().numTensors).toBe(before);
  });
});

const HF = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, vocab: 70 });

it.skipIf(ready)('refuses a bfloat16 base in one line where the kernels are absent', () => {
  expect(() => CausalLM.random(HF, 5, { bf16Base: true })).toThrow(
    /^model: a bfloat16 base needs the native backend's bfloat16 kernels/,
  );
});

describe.skipIf(!ready)('a LoRA model with a bfloat16 base', () => {
  const LORA = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] as const };
  // f32: the float32 model with every matrix rounded to bfloat16 in place; b16: the same draws packed.
  let f32: CausalLM;
  let b16: CausalLM;
  beforeAll(() => {
    f32 = CausalLM.random(HF, 5);
    for (const v of f32.baseVariables().values()) {
      if (v.rank !== 2) continue;
      v.assign(tf.tensor(unpackBf16(packBf16(v.dataSync() as Float32Array)), v.shape));
    }
    b16 = CausalLM.random(HF, 5, { bf16Base: true });
    f32.attachLora({ ...LORA, targets: [...LORA.targets] }, 9);
    b16.attachLora({ ...LORA, targets: [...LORA.targets] }, 9);
    // B starts at zero: give it values so the adapters take part in the comparison.
    for (const m of [f32, b16])
      for (const [name, v] of m.lora!.named())
        if (name.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.1, 'float32', name.length));
  });
  afterAll(() => {
    f32.dispose();
    b16.dispose();
  });
  const ids = tf.tensor2d([[1, 5, 9, 2, 33, 7]], undefined, 'int32'); // [1, T]

  it('keeps every base matrix packed (half the bytes) and the norms in float32', () => {
    const bytes = (m: CausalLM): number => [...m.baseVariables().values()].reduce((a, v) => a + v.size * 4, 0);
    expect(b16.bf16Base).toBe(true);
    expect(f32.bf16Base).toBe(false);
    const norms = [...b16.baseVariables().values()].filter((v) => v.rank === 1);
    expect(norms.every((v) => v.dtype === 'float32')).toBe(true);
    expect(bytes(b16)).toBeLessThan(0.52 * bytes(f32));
  });

  it('gives the logits of the rounded float32 model, in training and in cached inference', () => {
    const gap = tf.tidy(() => tf.max(tf.abs(tf.sub(b16.forward(ids), f32.forward(ids)))).dataSync()[0] as number);
    expect(gap).toBeLessThan(1e-5);
    const cached = (m: CausalLM): Float32Array => {
      const head = m.inferenceHead();
      try {
        return tf.tidy(() => {
          const pos = tf.tensor2d([[0, 1, 2, 3, 4, 5]]); // [1, T]
          const out = m.forwardCached(ids, pos, tf.onesLike(ids), undefined, true, head);
          return out.logits.dataSync() as Float32Array; // [1, V]
        });
      } finally {
        head.dispose();
      }
    };
    const a = cached(b16);
    const b = cached(f32);
    expect(Math.max(...a.map((x, i) => Math.abs(x - (b[i] as number))))).toBeLessThan(1e-5);
  });

  it("gives the adapters' gradients of the rounded float32 model", () => {
    const grads = (m: CausalLM): Float32Array[] =>
      tf.tidy(() => {
        const vars = m.trainableVariables();
        const { grads } = tf.variableGrads(() => tf.sum(tf.logSoftmax(m.forward(ids))) as tf.Scalar, vars);
        return vars.map((v) => grads[v.name]!.dataSync() as Float32Array);
      });
    const a = grads(b16);
    const b = grads(f32);
    expect(a.length).toBe(12);
    for (let k = 0; k < a.length; k++) {
      const scale = Math.max(...(b[k] as Float32Array).map(Math.abs));
      const gap = Math.max(...(a[k] as Float32Array).map((x, i) => Math.abs(x - (b[k] as Float32Array)[i]!)));
      expect(gap).toBeLessThanOrEqual(1e-4 * Math.max(1, scale));
    }
  });

  it('exports the same merged float32 checkpoint, and refuses full-parameter training', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sharp-bf16-'));
    try {
      await b16.save(join(dir, 'b16'));
      await f32.save(join(dir, 'f32'));
      const x = await readSafetensors(join(dir, 'b16', 'model.safetensors'));
      const y = await readSafetensors(join(dir, 'f32', 'model.safetensors'));
      expect([...x.keys()]).toEqual([...y.keys()]);
      for (const [name, t] of x) expect(Array.from(t.data), name).toEqual(Array.from(y.get(name)!.data));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const bare = CausalLM.random(HF, 5, { bf16Base: true });
    try {
      expect(() => bare.trainableVariables()).toThrow(/^model: the bfloat16 base is frozen; only LoRA adapters train/);
    } finally {
      bare.dispose();
    }
  });

  it('packs a float32 model in place (train.lora.baseDtype on a model loaded in float32)', () => {
    const m = CausalLM.random(HF, 5);
    try {
      m.packBase();
      expect(m.bf16Base).toBe(true);
      const plain = CausalLM.random(HF, 5, { bf16Base: true });
      const gap = tf.tidy(() => tf.max(tf.abs(tf.sub(m.forward(ids), plain.forward(ids)))).dataSync()[0] as number);
      plain.dispose();
      expect(gap).toBe(0);
    } finally {
      m.dispose();
    }
  });
});
