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
import { NATIVE_BACKEND, NATIVE_BACKEND_KERNELS, nativeBackendStatus, registerNativeBackend } from './backend.ts';
import { disableNativeKernels } from './register.ts';

/**
 * The `native` backend (tfjs-backend-cpu's arrays, the addon's typed-array kernels) against the wasm
 * backend with the heap kernels: the tiny model's logits, greedy decoding, and one GRPO step's loss,
 * gradient norm and updated weights agree to 1e-5. Skipped when no addon with the typed-array
 * binding loads.
 */
const typedBuilt = loadTypedAddon().addon !== undefined;
const CFG = hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, vocab: 96 });
const UPDATE: GrpoUpdateConfig = {
  clipLow: 0.2,
  clipHigh: 0.28,
  klBeta: 0,
  aggregation: 'token-mean',
  microBatch: 4,
  epochs: 1,
  gradClip: 1,
  sumNormLength: 0,
  oldLogp: 'recompute',
  logEntropy: false,
};

/** Eight fixed sequences of different lengths with a prompt of 3 and advantages of both signs. */
function sequences(): RlSequence[] {
  const rng = new Rng(11);
  return Array.from({ length: 8 }, (_, i) => {
    const n = 6 + (i % 4) * 3;
    const ids = Array.from({ length: n }, () => rng.int(0, 95));
    return {
      ids,
      trainMask: ids.map((_, t) => (t < 3 ? 0 : 1)),
      sampleLogp: ids.map(() => 0),
      adv: i % 2 === 0 ? 1 - i / 8 : -0.5 - i / 16,
      source: { trajectory: `t${i}`, agent: 0, message: 1 },
    };
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
  const ids = tf.tensor2d(
    [
      [1, 5, 9, 2, 7, 3],
      [4, 4, 8, 1, 0, 6],
    ],
    [2, 6],
    'int32',
  ); // [B, T]
  const out = tf.tidy(() => model.forward(ids)); // [B, T, vocab]
  const logits = Float32Array.from(out.dataSync());
  tf.dispose([ids, out]);
  const decoder = { decode: (t: number[]) => t.join(' ') };
  const greedy = (
    await generate(
      model,
      [
        { promptIds: [1, 2, 3], maxNewTokens: 6 },
        { promptIds: [7], maxNewTokens: 6 },
      ],
      { temperature: 0, topK: 0, topP: 1, rng: new Rng(1), eosIds: [], decoder },
    )
  ).map((r) => r.tokenIds);
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
    expect(s.kernels).toEqual(NATIVE_BACKEND_KERNELS.map((k) => k.name));
    for (const name of s.kernels)
      expect(tf.getKernel(name, NATIVE_BACKEND)?.kernelFunc, name).not.toBe(tf.getKernel(name, 'cpu')?.kernelFunc);
    expect(tf.getKernelsForBackend(NATIVE_BACKEND).length).toBeGreaterThanOrEqual(
      tf.getKernelsForBackend('cpu').length,
    );
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

  it('op by op: the kernels only the native backend replaces, and dtype/broadcast corners, equal wasm', async () => {
    const rng = new Rng(3);
    const vals = (n: number): number[] => Array.from({ length: n }, () => rng.float() * 4 - 2);
    const x = vals(3 * 5 * 7);
    const ints = Array.from({ length: 3 * 5 * 7 }, () => rng.int(-1000, 1000));
    const row = vals(7);
    const ops: [string, () => tf.Tensor][] = [
      ['cumsum axis 1', () => tf.cumsum(tf.tensor3d(x, [3, 5, 7]), 1)],
      ['cumsum exclusive reverse last', () => tf.cumsum(tf.tensor3d(x, [3, 5, 7]), 2, true, true)],
      ['int32 sum', () => tf.sum(tf.tensor3d(ints, [3, 5, 7], 'int32'), [0, 2])],
      ['int32 sum keepDims', () => tf.sum(tf.tensor3d(ints, [3, 5, 7], 'int32'), 1, true)],
      [
        'pad',
        () =>
          tf.pad(
            tf.tensor3d(x, [3, 5, 7]),
            [
              [1, 0],
              [0, 2],
              [0, 0],
            ],
            0.5,
          ),
      ],
      [
        'pad int32 last dim',
        () =>
          tf.pad(tf.tensor3d(ints, [3, 5, 7], 'int32'), [
            [0, 0],
            [0, 0],
            [2, 1],
          ]),
      ],
      ['broadcast multiply', () => tf.mul(tf.tensor3d(x, [3, 5, 7]), tf.tensor2d(row, [1, 7]))],
      ['compare int32', () => tf.cast(tf.less(tf.tensor1d(ints, 'int32'), tf.scalar(3, 'int32')), 'float32')],
      ['where', () => tf.where(tf.greater(tf.tensor1d(x), 0), tf.tensor1d(x), tf.zeros([x.length]))],
      [
        'gather + unsortedSegmentSum',
        () =>
          tf.unsortedSegmentSum(
            tf.gather(tf.tensor2d(x, [15, 7]), tf.tensor1d([3, 1, 3, 14], 'int32')),
            tf.tensor1d([0, 2, 0, 1], 'int32'),
            3,
          ),
      ],
      [
        'transpose + slice + concat',
        () =>
          tf.concat(
            [tf.slice(tf.transpose(tf.tensor3d(x, [3, 5, 7]), [2, 0, 1]), [1, 0, 2], [3, 3, 2]), tf.ones([3, 3, 1])],
            2,
          ),
      ],
      [
        'softmax + logSoftmax',
        () => tf.add(tf.softmax(tf.tensor2d(x, [15, 7])), tf.logSoftmax(tf.tensor2d(x, [15, 7]))),
      ],
      ['mean over two axes', () => tf.mean(tf.tensor3d(x, [3, 5, 7]), [0, 2])],
    ];
    const run = async (backend: string): Promise<Float32Array[]> => {
      await tf.setBackend(backend);
      return ops.map(([, f]) => tf.tidy(() => Float32Array.from(f().dataSync())));
    };
    const wasm = await run('wasm');
    const nat = await run(NATIVE_BACKEND);
    ops.forEach(([name], i) => expect(relDiff(nat[i]!, wasm[i]!), name).toBeLessThanOrEqual(1e-6));
  });

  it(
    'random shapes through the shared kernels (matmul broadcasting, transposes, reductions, broadcasts, layout) ' +
      'equal wasm',
    async () => {
      const rng = new Rng(9);
      const shape = (rank: number, hi = 5): number[] => Array.from({ length: rank }, () => rng.int(1, hi));
      const data = (s: number[]): Float32Array =>
        Float32Array.from({ length: s.reduce((a, b) => a * b, 1) }, () => rng.float() * 2 - 1);
      const perm = (rank: number): number[] => {
        const p = Array.from({ length: rank }, (_, i) => i);
        for (let i = rank - 1; i > 0; i--) {
          const j = rng.int(0, i);
          [p[i], p[j]] = [p[j]!, p[i]!];
        }
        return p;
      };
      // Each case draws its shapes and data now, so both backends see the same inputs.
      const cases: (() => tf.Tensor)[] = [];
      for (let k = 0; k < 12; k++) {
        const [m, n, kk] = [rng.int(1, 9), rng.int(1, 9), rng.int(1, 9)];
        const ba = shape(rng.int(0, 2), 3);
        const bb = ba.map((d) => (rng.int(0, 1) ? d : 1));
        const ta = rng.int(0, 1) === 1;
        const tb = rng.int(0, 1) === 1;
        const as = [...ba, ...(ta ? [kk, m] : [m, kk])];
        const bs = [...bb, ...(tb ? [n, kk] : [kk, n])];
        const [ad, bd] = [data(as), data(bs)];
        cases.push(() => tf.matMul(tf.tensor(ad, as), tf.tensor(bd, bs), ta, tb));
        const ts = shape(rng.int(2, 5));
        const [td, tp] = [data(ts), perm(ts.length)];
        cases.push(() => tf.transpose(tf.tensor(td, ts), tp));
        const rs = shape(rng.int(1, 4));
        const axes = perm(rs.length).slice(0, rng.int(1, rs.length));
        const [rd, op, keep] = [data(rs), rng.int(0, 4), rng.int(0, 1) === 1];
        cases.push(() => [tf.sum, tf.max, tf.min, tf.mean, tf.prod][op]!(tf.tensor(rd, rs), axes, keep));
        const xs = shape(rng.int(1, 4));
        const ys = xs.map((d) => (rng.int(0, 1) ? d : 1)).slice(rng.int(0, xs.length - 1));
        const [xd, yd, bop] = [data(xs), data(ys), rng.int(0, 3)];
        cases.push(() => [tf.add, tf.sub, tf.mul, tf.squaredDifference][bop]!(tf.tensor(xd, xs), tf.tensor(yd, ys)));
        const cs = shape(3);
        const axis = rng.int(0, 2);
        const cs2 = cs.map((d, i) => (i === axis ? rng.int(1, 4) : d));
        const [cd, cd2] = [data(cs), data(cs2)];
        cases.push(() => tf.concat([tf.tensor(cd, cs), tf.tensor(cd2, cs2)], axis));
        const ids = Array.from({ length: rng.int(1, 6) }, () => rng.int(0, cs[axis]! - 1));
        cases.push(() => tf.gather(tf.tensor(cd, cs), tf.tensor1d(ids, 'int32'), axis));
      }
      const run = async (backend: string): Promise<Float32Array[]> => {
        await tf.setBackend(backend);
        return cases.map((f) => tf.tidy(() => Float32Array.from(f().dataSync())));
      };
      const wasm = await run('wasm');
      const nat = await run(NATIVE_BACKEND);
      cases.forEach((_, i) => expect(relDiff(nat[i]!, wasm[i]!), `case ${i}`).toBeLessThanOrEqual(1e-6));
    },
  );

  it('decoding selections and fills equal tfjs-backend-cpu, ties and NaN included', async () => {
    const rng = new Rng(5);
    const x = Array.from({ length: 6 * 50 }, () => Math.round(rng.float() * 20) / 4); // many ties
    x[7] = NaN;
    x[60] = NaN;
    const ops: [string, () => tf.Tensor | tf.Tensor[]][] = [
      ['argMax', () => tf.argMax(tf.tensor2d(x, [6, 50]), 1)],
      ['argMax rank 3', () => tf.argMax(tf.tensor3d(x, [2, 3, 50]), -1)],
      ['topk 5', () => Object.values(tf.topk(tf.tensor2d(x, [6, 50]), 5))],
      ['topk 50', () => Object.values(tf.topk(tf.tensor2d(x, [6, 50]), 50))],
      ['topk 1 rank 1', () => Object.values(tf.topk(tf.tensor1d(x.slice(0, 50)), 1))],
      [
        'scatterND with a repeated index',
        () =>
          tf.scatterND(
            tf.tensor2d([3, 0, 3, 5], [4, 1], 'int32'),
            tf.tensor2d(
              x.slice(0, 4 * 7).map((v) => v || 1),
              [4, 7],
            ),
            [6, 7],
          ),
      ],
      [
        'scatterND 2-d index',
        () => tf.scatterND(tf.tensor2d([1, 2, 0, 0], [2, 2], 'int32'), tf.tensor2d(x.slice(10, 18), [2, 4]), [2, 3, 4]),
      ],
      [
        'zerosLike onesLike fill',
        () => [
          tf.zerosLike(tf.tensor1d(x)),
          tf.onesLike(tf.tensor2d(x, [6, 50], 'int32')),
          tf.fill([3, 4], 2.5),
          tf.fill([2], 7, 'int32'),
        ],
      ],
    ];
    const run = async (backend: string): Promise<number[][][]> => {
      await tf.setBackend(backend);
      return ops.map(([, f]) => tf.tidy(() => [f()].flat().map((t) => Array.from(t.dataSync()))));
    };
    const cpu = await run('cpu');
    const nat = await run(NATIVE_BACKEND);
    ops.forEach(([name], i) => expect(nat[i], name).toEqual(cpu[i]));
  });

  it('a buffer a JS kernel shares (a simple slice keeps a view) is never recycled under it', async () => {
    await tf.setBackend(NATIVE_BACKEND);
    const big = tf.add(tf.range(0, 4096), 1).asType('bool'); // a pooled native output (bool: the JS Slice keeps a view)
    const view = tf.slice(big, [0], [2048]);
    big.dispose();
    // same size and dtype: would take the buffer if it were recycled
    const other = tf.tidy(() => tf.greater(tf.zeros([4096]), 1));
    expect(Array.from(view.dataSync()).every((v) => v === 1)).toBe(true);
    tf.dispose([view, other]);
  });

  it('AdamW in place never writes through a view another tensor still sees (a simple StridedSlice is a subarray)', async () => {
    await tf.setBackend(NATIVE_BACKEND);
    const { nativeAdamW } = await import('./adamw.ts');
    const x = tf.tensor1d([1, 2, 3, 4, 5, 6, 7, 8]);
    const s = tf.stridedSlice(x, [2], [6]);
    const w = tf.variable(s);
    s.dispose();
    const g = tf.ones([4]);
    const m = tf.variable(tf.zerosLike(w));
    const v = tf.variable(tf.zerosLike(w));
    nativeAdamW([w], [g], [m], [v], 1, { lr: 0.1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0 });
    expect(Array.from(x.dataSync())).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(Array.from(w.dataSync()).map((a) => Math.round(a * 1000) / 1000)).toEqual([2.9, 3.9, 4.9, 5.9]);
    tf.dispose([x, w, g, m, v]);
  });

  it('a kept dataSync() does not change when AdamW updates the weight in place', async () => {
    await tf.setBackend(NATIVE_BACKEND);
    const w = tf.variable(tf.tensor1d([1, 2, 3]));
    const kept = w.dataSync();
    const g = tf.tensor1d([1, 1, 1]);
    const m = tf.variable(tf.zerosLike(w));
    const v = tf.variable(tf.zerosLike(w));
    const { nativeAdamW } = await import('./adamw.ts');
    expect(
      nativeAdamW([w], [g], [m], [v], 1, { lr: 0.1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0 }).path,
    ).toBe('native');
    expect(Array.from(kept)).toEqual([1, 2, 3]);
    expect(Array.from(w.dataSync()).map((x) => Math.round(x * 1000) / 1000)).toEqual([0.9, 1.9, 2.9]);
    tf.dispose([w, g, m, v]);
  });
});
