import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generate } from '../../generation/generate.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { Rng } from '../../random/rng.ts';
import { AdamW } from '../../train/optim/adamw.ts';
import { GradientAccumulator } from '../../train/optim/accumulate.ts';
import { grpoUpdate, type GrpoUpdateConfig } from '../../train/grpo/update.ts';
import type { RlSequence } from '../../train/batches/sequences.ts';
import { initBackend } from '../select.ts';
import { loadTypedAddon } from './addon.ts';
import { fusedAdamWReady } from './adamw.ts';
import { NATIVE_BACKEND, nativeBackendStatus, registerNativeBackend } from './backend.ts';
import { disableNativeKernels, NATIVE_KERNELS } from './register.ts';

/**
 * The `native` backend (tfjs-backend-cpu's arrays, the addon's typed-array kernels) against the wasm
 * backend with the heap kernels: the tiny model's logits, greedy decoding, and one GRPO step's loss,
 * gradient norm and updated weights agree to 1e-5. Skipped when no addon with the typed-array
 * binding loads.
 */
const typedBuilt = loadTypedAddon().addon !== undefined;
const CFG = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, vocab: 96 });
const UPDATE: GrpoUpdateConfig = { clipLow: 0.2, clipHigh: 0.28, klBeta: 0, aggregation: 'token-mean', microBatch: 4, epochs: 1, gradClip: 1, sumNormLength: 0, oldLogp: 'recompute', logEntropy: false };

/** Eight fixed sequences of different lengths with a prompt of 3 and advantages of both signs. */
function sequences(): RlSequence[] {
  const rng = new Rng(11);
  return Array.from({ length: 8 }, (_, i) => {
    const n = 6 + (i % 4) * 3;
    const ids = Array.from({ length: n }, () => rng.int(0, 95));
    return { ids, trainMask: ids.map((_, t) => (t < 3 ? 0 : 1)), sampleLogp: ids.map(() => 0), adv: i % 2 === 0 ? 1 - i / 8 : -0.5 - i / 16, source: { trajectory: `t${i}`, agent: 0, message: 1 } };
  });
}

interface Outcome {
  logits: Float32Array;
  greedy: number[][];
  loss: number;
  gradNorm: number;
  weights: Map<string, Float32Array>;
  fused: boolean;
  leak: number;
}

async function outcome(backend: string): Promise<Outcome> {
  await tf.setBackend(backend);
  const model = CausalLM.random(CFG, 5);
  const ids = tf.tensor2d([[1, 5, 9, 2, 7, 3], [4, 4, 8, 1, 0, 6]], [2, 6], 'int32'); // [B, T]
  const out = tf.tidy(() => model.forward(ids)); // [B, T, vocab]
  const logits = Float32Array.from(out.dataSync());
  tf.dispose([ids, out]);
  const decoder = { decode: (t: number[]) => t.join(' ') };
  const greedy = (await generate(model, [{ promptIds: [1, 2, 3], maxNewTokens: 6 }, { promptIds: [7], maxNewTokens: 6 }], { temperature: 0, topK: 0, topP: 1, rng: new Rng(1), eosIds: [], decoder })).map((r) => r.tokenIds);
  const fused = fusedAdamWReady();
  const optimizer = new AdamW({ lr: 1e-2, weightDecay: 0.01, fused });
  const accumulator = new GradientAccumulator(model.trainableVariables());
  const before = tf.memory().numTensors;
  const m = grpoUpdate({ model, optimizer, accumulator, lr: 1e-2 }, sequences(), UPDATE);
  const weights = new Map([...model.namedVariables()].map(([n, v]) => [n, Float32Array.from(v.dataSync())]));
  const leak = tf.memory().numTensors - before;
  accumulator.dispose();
  optimizer.dispose();
  model.dispose();
  return { logits, greedy, loss: m['losses/total']!, gradNorm: m['grad/norm']!, weights, fused, leak };
}

/** max |a - b| / max(1, max |b|): relative to the tensor's scale, absolute near zero. */
function relDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let s = 1;
  for (let i = 0; i < b.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    s = Math.max(s, Math.abs(b[i]!));
  }
  return a.length === b.length ? d / s : Infinity;
}

describe.skipIf(!typedBuilt)('the native backend against wasm', () => {
  beforeAll(async () => {
    await initBackend('wasm'); // with the native heap kernels installed
    expect(registerNativeBackend().mode).toBe('native');
  });
  afterAll(async () => {
    await tf.setBackend('wasm');
    disableNativeKernels();
  });

  it('registers every hot kernel over the cpu ones and keeps the rest of tfjs-backend-cpu', () => {
    const s = nativeBackendStatus();
    expect(s).toMatchObject({ loaded: true, mode: 'native', reason: '' });
    expect(s.kernels).toEqual(NATIVE_KERNELS.map((k) => k.name));
    for (const name of s.kernels) expect(tf.getKernel(name, NATIVE_BACKEND)?.kernelFunc, name).not.toBe(tf.getKernel(name, 'cpu')?.kernelFunc);
    expect(tf.getKernelsForBackend(NATIVE_BACKEND).length).toBeGreaterThanOrEqual(tf.getKernelsForBackend('cpu').length);
  });

  it('logits, greedy decoding and one GRPO step (loss, gradient norm, updated weights) agree to 1e-5', async () => {
    const wasm = await outcome('wasm');
    const nat = await outcome(NATIVE_BACKEND);
    expect(wasm.fused && nat.fused).toBe(true);
    expect(relDiff(nat.logits, wasm.logits)).toBeLessThanOrEqual(1e-5);
    expect(nat.greedy).toEqual(wasm.greedy);
    expect(Math.abs(nat.loss - wasm.loss)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(wasm.loss)));
    expect(Math.abs(nat.gradNorm - wasm.gradNorm)).toBeLessThanOrEqual(1e-5 * Math.max(1, wasm.gradNorm));
    expect([...nat.weights.keys()]).toEqual([...wasm.weights.keys()]);
    for (const [name, w] of wasm.weights) expect(relDiff(nat.weights.get(name)!, w), name).toBeLessThanOrEqual(1e-5);
    expect(nat.leak).toBe(wasm.leak);
  });

  it('a kept dataSync() does not change when AdamW updates the weight in place', async () => {
    await tf.setBackend(NATIVE_BACKEND);
    const w = tf.variable(tf.tensor1d([1, 2, 3]));
    const kept = w.dataSync();
    const g = tf.tensor1d([1, 1, 1]);
    const m = tf.variable(tf.zerosLike(w));
    const v = tf.variable(tf.zerosLike(w));
    const { nativeAdamW } = await import('./adamw.ts');
    expect(nativeAdamW([w], [g], [m], [v], 1, { lr: 0.1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0 }).path).toBe('native');
    expect(Array.from(kept)).toEqual([1, 2, 3]);
    expect(Array.from(w.dataSync()).map((x) => Math.round(x * 1000) / 1000)).toEqual([0.9, 1.9, 2.9]);
    tf.dispose([w, g, m, v]);
  });
});
