import * as tf from '@tensorflow/tfjs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refInvFreq, refYarnScale } from '../../test/rope-reference.ts';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor, type BuildOptions } from './config.ts';
import { parseHfConfig } from './io/hf-config.ts';
import { readWeights } from './io/safetensors.ts';
import { referenceLogits } from '../../test/reference/forward.ts';

/**
 * RoPE settings of real checkpoints end to end: a Transformers 5 config.json (rope_parameters) must
 * give the logits of its 4.x twin, and llama3 / yarn scaling must match the float64 reference fed
 * with frequencies from the published formulas (test/rope-reference.ts, not the decoder's code).
 */
const QWEN3: BuildOptions = {
  arch: 'qwen3',
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 2,
  headDim: 16,
  intermediate: 96,
  vocab: 97,
  tieEmbeddings: false,
  ropeTheta: 1e6,
};
const LLAMA: BuildOptions = {
  arch: 'llama',
  layers: 2,
  hidden: 48,
  heads: 3,
  kvHeads: 1,
  headDim: 16,
  intermediate: 80,
  vocab: 89,
  tieEmbeddings: false,
};
const IDS = [3, 17, 42, 5, 66, 0, 11, 64, 8, 31, 2, 50, 19, 7, 44, 23];

let dir: string;
beforeAll(async () => {
  await initBackend('wasm');
  dir = await mkdtemp(join(tmpdir(), 'sharp-rope-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function logitsOf(m: CausalLM, ids: number[]): Float32Array {
  return tf.tidy(() => m.forward(tf.tensor2d(ids, [1, ids.length], 'int32')).dataSync() as Float32Array); // [1, T, V]
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs((a[i] as number) - (b[i] as number)));
  return d;
}

function greedy(logits: Float32Array, v: number): number[] {
  const out: number[] = [];
  for (let t = 0; t < logits.length / v; t++) {
    const row = logits.subarray(t * v, (t + 1) * v);
    out.push(row.indexOf(Math.max(...row)));
  }
  return out;
}

/**
 * Moves biases off 0 and norm gains off 1 so a dropped one changes the logits, and sharpens q/k
 * (N(0, 0.02) weights give near-uniform attention, where positions barely matter).
 */
function perturb(m: CausalLM): CausalLM {
  for (const [name, v] of m.namedVariables()) {
    if (/(q|k)_proj\.weight$/.test(name)) tf.tidy(() => v.assign(tf.mul(v, 12)));
    if (/bias$|norm\.weight$/.test(name))
      tf.tidy(() => v.assign(tf.add(v, tf.mul(0.3, tf.sin(tf.range(1, v.size + 1).reshape(v.shape))))));
  }
  return m;
}

describe('Transformers 5 config.json (rope_parameters)', () => {
  it('gives the logits of its 4.x twin (rope_theta 1e6), not those of theta 10000, and saves back in 5.x format', async () => {
    const m = perturb(CausalLM.random(hfConfigFor(QWEN3), 11));
    const v4dir = join(dir, 'qwen3-v4');
    await m.save(v4dir);
    const cfg4 = JSON.parse(await readFile(join(v4dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(cfg4.rope_theta).toBe(1e6);
    // The same folder as Transformers 5 writes it.
    const { rope_theta: _t, rope_scaling: _s, ...rest } = cfg4;
    const cfg5 = {
      ...rest,
      rope_parameters: { rope_theta: 1000000.0, rope_type: 'default' },
      dtype: 'float32',
      transformers_version: '5.0.0',
      layer_types: ['full_attention', 'full_attention'],
      use_sliding_window: false,
      sliding_window: null,
      max_window_layers: 2,
    };
    const v5dir = join(dir, 'qwen3-v5');
    await m.save(v5dir);
    await writeFile(join(v5dir, 'config.json'), JSON.stringify(cfg5));
    const a = await CausalLM.load(v4dir);
    const b = await CausalLM.load(v5dir);
    expect(b.config.rope).toEqual({ type: 'default', theta: 1e6 });
    const la = logitsOf(a, IDS);
    const lb = logitsOf(b, IDS);
    expect(maxAbsDiff(la, lb)).toBe(0);
    // The failure this guards against: theta 10000 really changes the logits and the greedy tokens.
    const w10k = perturb(CausalLM.random(parseHfConfig({ ...cfg4, rope_theta: 10000 }), 11));
    const lw = logitsOf(w10k, IDS);
    expect(maxAbsDiff(la, lw)).toBeGreaterThan(1e-3);
    expect(greedy(la, QWEN3.vocab)).not.toEqual(greedy(lw, QWEN3.vocab));
    // Round trip keeps the 5.x spelling.
    const back = join(dir, 'qwen3-v5-saved');
    await b.save(back);
    const saved = JSON.parse(await readFile(join(back, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(saved.rope_parameters).toEqual({ rope_theta: 1e6, rope_type: 'default' });
    expect(saved).not.toHaveProperty('rope_theta');
    expect(saved).not.toHaveProperty('rope_scaling');
    expect(saved.layer_types).toEqual(['full_attention', 'full_attention']);
    [m, a, b, w10k].forEach((x) => x.dispose());
  });
});

describe('scaled RoPE forward against the float64 reference (1e-4)', () => {
  // original context 64 with head_dim 16 puts the pairs in all three llama3 bands and across the yarn ramp.
  const cases: [string, Record<string, unknown>, { invFreq: number[]; attentionScaling: number }][] = [
    [
      'llama3 (factor 8, low 1, high 4, original 64)',
      {
        rope_theta: 10000,
        rope_scaling: {
          rope_type: 'llama3',
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 64,
        },
      },
      {
        invFreq: refInvFreq({
          dim: 16,
          base: 10000,
          kind: 'llama3',
          scale: 8,
          lowFreq: 1,
          highFreq: 4,
          oldContext: 64,
        }),
        attentionScaling: 1,
      },
    ],
    [
      'yarn (factor 4, original 64, default attention factor), 5.x spelling',
      { rope_parameters: { rope_type: 'yarn', rope_theta: 10000, factor: 4, original_max_position_embeddings: 64 } },
      {
        invFreq: refInvFreq({ dim: 16, base: 10000, kind: 'yarn', scale: 4, oldContext: 64, alpha: 1, beta: 32 }),
        attentionScaling: refYarnScale(4),
      },
    ],
    [
      'linear (factor 2)',
      { rope_theta: 500, rope_scaling: { rope_type: 'linear', factor: 2 } },
      { invFreq: refInvFreq({ dim: 16, base: 500, kind: 'linear', scale: 2 }), attentionScaling: 1 },
    ],
  ];
  for (const [label, rope, ref] of cases) {
    it(label, async () => {
      const { rope_theta: _t, rope_scaling: _s, ...plain } = hfConfigFor(LLAMA);
      const m = perturb(CausalLM.random(parseHfConfig({ ...plain, ...rope }), 5));
      const sub = join(dir, label.split(' ')[0] as string);
      await m.save(sub);
      const w = await readWeights(sub);
      const got = logitsOf(m, IDS);
      const want = referenceLogits(m.config, w, IDS, ref).flatMap((r) => Array.from(r));
      expect(maxAbsDiff(got, want)).toBeLessThan(1e-4);
      // And the scaling matters: the plain-RoPE reference is far off.
      const unscaled = referenceLogits(m.config, w, IDS, {
        invFreq: refInvFreq({ dim: 16, base: m.config.rope.theta, kind: 'default' }),
        attentionScaling: 1,
      }).flatMap((r) => Array.from(r));
      expect(maxAbsDiff(got, unscaled)).toBeGreaterThan(1e-3);
      const back = await CausalLM.load(sub);
      expect(back.config.rope).toEqual(m.config.rope);
      expect(maxAbsDiff(logitsOf(back, IDS), got)).toBe(0);
      m.dispose();
      back.dispose();
    });
  }
});

describe('llama attention_bias and mlp_bias', () => {
  it('q/k/v/o and gate/up/down biases: weights saved and loaded, logits match the reference to 1e-4', async () => {
    const m = perturb(
      CausalLM.random(parseHfConfig({ ...hfConfigFor(LLAMA), attention_bias: true, mlp_bias: true }), 9),
    );
    expect([m.config.qkvBias, m.config.oBias, m.config.mlpBias]).toEqual([true, true, true]);
    const sub = join(dir, 'llama-bias');
    await m.save(sub);
    const w = await readWeights(sub);
    for (const n of [
      'self_attn.q_proj',
      'self_attn.k_proj',
      'self_attn.v_proj',
      'self_attn.o_proj',
      'mlp.gate_proj',
      'mlp.up_proj',
      'mlp.down_proj',
    ]) {
      expect(w.has(`model.layers.1.${n}.bias`)).toBe(true);
    }
    const got = logitsOf(m, IDS);
    expect(
      maxAbsDiff(
        got,
        referenceLogits(m.config, w, IDS).flatMap((r) => Array.from(r)),
      ),
    ).toBeLessThan(1e-4);
    const back = await CausalLM.load(sub);
    expect(maxAbsDiff(logitsOf(back, IDS), got)).toBe(0);
    // Dropping the MLP bias is not silent: the reference without it disagrees.
    const noMlp = new Map([...w].filter(([k]) => !/mlp\.\w+\.bias$/.test(k)));
    const cfgNoMlp = { ...m.config, mlpBias: false };
    expect(
      maxAbsDiff(
        got,
        referenceLogits(cfgNoMlp, noMlp, IDS).flatMap((r) => Array.from(r)),
      ),
    ).toBeGreaterThan(1e-3);
    m.dispose();
    back.dispose();
  });
});
