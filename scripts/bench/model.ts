import * as tf from '@tensorflow/tfjs';
import { generate } from '../../src/generation/generate.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { hfConfigFor, type BuildOptions } from '../../src/model/config.ts';
import { positionsFromMask } from '../../src/model/decoder.ts';
import { tokenLogprobs } from '../../src/model/logprobs.ts';
import { tidyObject } from '../../src/model/tidy.ts';
import { Rng } from '../../src/random/rng.ts';
import { AdamW } from '../../src/train/optim/adamw.ts';
import { fusedAdamWAvailable } from '../../src/train/optim/optimizer.ts';
import type { BenchRow } from './types.ts';
import { median } from './median.ts';

/**
 * Model section of `npm run bench`: the fixed tiny model
 * (2 layers, d=128, 4 heads, vocab 2000, batch 8 x 64). Targets on wasm, 2 cores: train step
 * <= 300 ms median, decode <= 5 ms/step.
 */
export const BENCH_MODEL: BuildOptions = {
  arch: 'llama',
  layers: 2,
  hidden: 128,
  heads: 4,
  kvHeads: 4,
  intermediate: 344,
  vocab: 2000,
  tieEmbeddings: true,
};
const BATCH = 8;
const SEQ = 64;

/**
 * The trainers' optimizer at the bench's rate: AdamW with no weight decay (Adam's update, as in
 * scripts/torch-train-step.py), fused where the native kernels serve the backend, as createAdamW does.
 */
export function benchAdam(): AdamW {
  return new AdamW({ lr: 1e-3, weightDecay: 0, fused: fusedAdamWAvailable() });
}

/**
 * CPU time of this process since c0, in ms. Reported beside wall time because the 2 cores here are
 * shared: under load, wall time measures the neighbours; single-threaded wasm CPU time does not.
 */
function cpuMs(c0: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

function randomIds(rng: Rng, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => rng.int(0, vocab - 1));
}

async function trainStep(model: CausalLM, steps: number, warmup: number): Promise<BenchRow[]> {
  const rng = new Rng(1);
  const opt = benchAdam();
  const ids = tf.tensor2d(randomIds(rng, BATCH * SEQ, BENCH_MODEL.vocab), [BATCH, SEQ], 'int32'); // [B, T]
  const mask = tf.ones([BATCH, SEQ], 'int32') as tf.Tensor2D; // [B, T]
  const times: number[] = [];
  const cpu: number[] = [];
  let tensors = 0;
  for (let i = 0; i < warmup + steps; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const loss = opt.minimize(
      () => tf.neg(tf.mean(tokenLogprobs(model, ids, mask))) as tf.Scalar,
      true,
      model.trainableVariables(),
    );
    await loss?.data(); // wait for the step to finish (the loss read is the step's only sync)
    loss?.dispose();
    if (i >= warmup) {
      times.push(performance.now() - t0);
      cpu.push(cpuMs(c0));
    }
    if (i === warmup) tensors = tf.memory().numTensors;
  }
  const leak = tf.memory().numTensors - tensors;
  tf.dispose([ids, mask]);
  opt.dispose();
  const ms = median(times);
  return [
    { section: 'model', metric: 'train step (fwd+bwd+Adam), median', value: ms, unit: 'ms', target: '<= 300' },
    {
      section: 'model',
      metric: 'train step, process CPU time, median',
      value: median(cpu),
      unit: 'ms',
      target: '<= 300',
    },
    { section: 'model', metric: 'train tokens/s', value: (BATCH * SEQ * 1000) / ms, unit: 'tok/s' },
    { section: 'model', metric: 'train tensor leak over steps', value: leak, unit: 'tensors', target: '0' },
  ];
}

async function prefill(model: CausalLM, reps: number): Promise<BenchRow[]> {
  const rng = new Rng(2);
  const times: number[] = [];
  const headT = model.inferenceHead(); // as generate() uses it
  for (let i = 0; i < reps + 2; i++) {
    const t0 = performance.now();
    const out = tidyObject(() => {
      const ids = tf.tensor2d(randomIds(rng, BATCH * SEQ, BENCH_MODEL.vocab), [BATCH, SEQ], 'int32'); // [B, T]
      const mask = tf.ones([BATCH, SEQ], 'float32') as tf.Tensor2D; // [B, T]
      return model.forwardCached(ids, positionsFromMask(mask), mask, undefined, true, headT);
    });
    await out.logits.data();
    tf.dispose([out.logits, ...out.kv.flatMap((l) => [l.k, l.v])]);
    if (i >= 2) times.push(performance.now() - t0);
  }
  headT.dispose();
  return [
    { section: 'model', metric: `prefill ${BATCH}x${SEQ}`, value: (BATCH * SEQ * 1000) / median(times), unit: 'tok/s' },
  ];
}

async function decode(model: CausalLM, newTokens: number): Promise<BenchRow[]> {
  const rng = new Rng(3);
  const prompts = Array.from({ length: BATCH }, () => ({
    promptIds: randomIds(rng, 16, BENCH_MODEL.vocab),
    maxNewTokens: 1,
  }));
  const decoder = { decode: (ids: number[]): string => ids.join(' ') }; // bench has no tokenizer; the text is not used
  const opts = { temperature: 1, topK: 0, topP: 1, rng, eosIds: [], decoder };
  const run = async (n: number): Promise<[number, number]> => {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await generate(
      model,
      prompts.map((p) => ({ ...p, maxNewTokens: n })),
      opts,
    );
    return [performance.now() - t0, cpuMs(c0)];
  };
  await run(8); // warm-up: kernels, wasm memory growth
  const before = tf.memory().numTensors;
  const ones = [await run(1), await run(1), await run(1)];
  const manys = [await run(newTokens + 1), await run(newTokens + 1), await run(newTokens + 1)];
  const ms = (median(manys.map((x) => x[0])) - median(ones.map((x) => x[0]))) / newTokens;
  const cpuPerStep = (median(manys.map((x) => x[1])) - median(ones.map((x) => x[1]))) / newTokens;
  return [
    { section: 'model', metric: `decode step, KV cache, batch ${BATCH}`, value: ms, unit: 'ms/step', target: '<= 5' },
    { section: 'model', metric: 'decode step, process CPU time', value: cpuPerStep, unit: 'ms/step', target: '<= 5' },
    { section: 'model', metric: 'decode tokens/s', value: (BATCH * 1000) / ms, unit: 'tok/s' },
    {
      section: 'model',
      metric: 'decode tensor leak',
      value: tf.memory().numTensors - before,
      unit: 'tensors',
      target: '0',
    },
  ];
}

/** Runs the model section; `quick` shortens it (for the bench's own test). */
export async function benchModel(quick = false): Promise<BenchRow[]> {
  const model = CausalLM.random(hfConfigFor(BENCH_MODEL), 0);
  try {
    return [
      ...(await trainStep(model, quick ? 2 : 40, quick ? 1 : 20)),
      ...(await prefill(model, quick ? 1 : 5)),
      ...(await decode(model, quick ? 4 : 64)),
    ];
  } finally {
    model.dispose();
  }
}
