import * as tf from '@tensorflow/tfjs';
import { nativeAdamW, type AdamWHyper } from '../../src/backend/native/adamw.ts';
import {
  disableNativeKernels,
  enableFallbackKernels,
  enableNativeKernels,
  useBlasThreadsFor,
  type NativeStatus,
} from '../../src/backend/native/register.ts';
import { generate } from '../../src/generation/generate.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { hfConfigFor } from '../../src/model/config.ts';
import { tokenLogprobs } from '../../src/model/logprobs.ts';
import { Rng } from '../../src/random/rng.ts';
import { BENCH_MODEL } from './model.ts';
import type { BenchRow } from './types.ts';
import { median } from './median.ts';

/**
 * Native-kernel section of `npm run bench`: the bench model (2 layers, d=128, 4 heads,
 * vocab 2000, batch 8 x 64) timed with the native kernels, the pure-wasm fallback and plain wasm
 * side by side in one process, interleaved round by round so that machine load hits all three
 * alike. Train step = forward + backward + AdamW (fused native kernel when the addon is loaded, tfjs
 * ops otherwise); threads 'auto' (every kernel, GEMMs included, split across the addon's pool; decode-size GEMMs on one
 * thread). Targets on the 2-core bench machine: native train <= 90 ms, decode <= 3.5 ms/step.
 */
export type KernelMode = 'native' | 'wasm-fallback' | 'plain wasm';
export const MODES: readonly KernelMode[] = ['native', 'wasm-fallback', 'plain wasm'];
const BATCH = 8;
const SEQ = 64;
const HP: AdamWHyper = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 };

/** Installs one mode's kernels; returns undefined when the mode is unavailable (no addon). */
export function useMode(mode: KernelMode): NativeStatus | undefined {
  disableNativeKernels();
  if (mode === 'plain wasm')
    return { loaded: false, mode: 'off', reason: 'plain wasm requested', kernels: [], blasThreads: 0 };
  const s = mode === 'native' ? enableNativeKernels() : enableFallbackKernels();
  return mode === 'native' && s.mode !== 'native' ? undefined : s;
}

/** A model with its AdamW moments and a fixed batch: one train step = fwd + bwd + AdamW. */
export class TrainHarness {
  readonly model: CausalLM;
  private readonly vars: tf.Variable[];
  private readonly m: tf.Variable[];
  private readonly v: tf.Variable[];
  private readonly ids: tf.Tensor2D;
  private readonly mask: tf.Tensor2D;
  private t = 0;

  constructor(seed: number) {
    this.model = CausalLM.random(hfConfigFor(BENCH_MODEL), seed);
    this.vars = this.model.trainableVariables();
    this.m = this.vars.map((x) => tf.variable(tf.zerosLike(x), false));
    this.v = this.vars.map((x) => tf.variable(tf.zerosLike(x), false));
    const rng = new Rng(seed + 1);
    const ids = Array.from({ length: BATCH * SEQ }, () => rng.int(0, BENCH_MODEL.vocab - 1));
    this.ids = tf.tensor2d(ids, [BATCH, SEQ], 'int32'); // [B, T]
    this.mask = tf.ones([BATCH, SEQ], 'int32') as tf.Tensor2D; // [B, T]
  }

  /** One step; returns the loss (mean negative token logprob) before the update. */
  async step(): Promise<number> {
    const { value, grads } = tf.variableGrads(
      () => tf.neg(tf.mean(tokenLogprobs(this.model, this.ids, this.mask))) as tf.Scalar,
      this.vars,
    );
    nativeAdamW(
      this.vars,
      this.vars.map((x) => grads[x.name]!),
      this.m,
      this.v,
      ++this.t,
      HP,
    );
    const loss = (await value.data())[0]!;
    tf.dispose([value, ...Object.values(grads)]);
    return loss;
  }

  dispose(): void {
    this.model.dispose();
    tf.dispose([...this.m, ...this.v, this.ids, this.mask]);
  }
}

async function decodeMs(model: CausalLM, newTokens: number): Promise<number> {
  const rng = new Rng(3);
  const prompts = Array.from({ length: BATCH }, () => ({
    promptIds: Array.from({ length: 16 }, () => rng.int(0, BENCH_MODEL.vocab - 1)),
    maxNewTokens: 1,
  }));
  const decoder = { decode: (ids: number[]): string => ids.join(' ') };
  const opts = { temperature: 1, topK: 0, topP: 1, rng, eosIds: [], decoder };
  const run = async (n: number): Promise<number> => {
    const t0 = performance.now();
    await generate(
      model,
      prompts.map((p) => ({ ...p, maxNewTokens: n })),
      opts,
    );
    return performance.now() - t0;
  };
  const one = await run(1);
  const many = await run(newTokens + 1);
  return (many - one) / newTokens;
}

/** Runs the section; `quick` shortens it (for tests). */
export async function benchNative(quick = false): Promise<BenchRow[]> {
  const modes = MODES.filter((m) => useMode(m) !== undefined);
  const rows: BenchRow[] = [];
  if (!modes.includes('native'))
    rows.push({ section: 'native', metric: 'addon not loaded: native columns skipped', value: 0, unit: '' });
  const h = new TrainHarness(0);
  const train = new Map<KernelMode, number[]>(modes.map((m) => [m, []]));
  const decode = new Map<KernelMode, number[]>(modes.map((m) => [m, []]));
  const leak = new Map<KernelMode, number>(modes.map((m) => [m, 0]));
  try {
    const rounds = quick ? 2 : 8;
    for (let r = 0; r < rounds + 1; r++) {
      for (const mode of modes) {
        useMode(mode);
        useBlasThreadsFor('auto'); // the addon's pool for every kernel, decode-size GEMMs on one thread
        await h.step(); // warm-up in this mode (first-use kernel set-up, memory growth)
        const before = tf.memory().numTensors;
        const steps = quick ? 2 : 3;
        for (let i = 0; i < steps; i++) {
          const t0 = performance.now();
          await h.step();
          if (r > 0) train.get(mode)!.push(performance.now() - t0);
        }
        leak.set(mode, Math.max(leak.get(mode)!, tf.memory().numTensors - before));
        const d = await decodeMs(h.model, quick ? 4 : 24);
        if (r > 0) decode.get(mode)!.push(d);
      }
    }
  } finally {
    disableNativeKernels();
    h.dispose();
  }
  for (const mode of modes) {
    rows.push({
      section: 'native',
      metric: `${mode}: train step (fwd+bwd+AdamW), median`,
      value: median(train.get(mode)!),
      unit: 'ms',
      target: mode === 'native' ? '<= 90' : undefined,
    });
    rows.push({
      section: 'native',
      metric: `${mode}: decode step, KV cache, batch ${BATCH}, median`,
      value: median(decode.get(mode)!),
      unit: 'ms/step',
      target: mode === 'native' ? '<= 3.5' : undefined,
    });
    rows.push({
      section: 'native',
      metric: `${mode}: train tensor leak`,
      value: leak.get(mode)!,
      unit: 'tensors',
      target: '0',
    });
  }
  return rows;
}
