import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { rmsNorm } from './norm.ts';
import { applyRope, ropeTables, type RopeTables } from './rope.ts';
import { siluGate } from './swiglu.ts';
import { selectedLogprobs } from './logprobs.ts';
import { TRAIN_OPS } from './op-set.ts';
import { sdpa } from './sdpa.ts';
import { Rng } from '../../random/rng.ts';
import { addonBuilt, randArr, setupNative, toTensor } from '../../../test/native-testkit.ts';
import { relErr } from '../../../test/reference/kernels.ts';
import { nativeAdamW } from '../../backend/native/adamw.ts';
import { nativeContext } from '../../backend/native/register.ts';

/**
 * The kernels that split their rows or values across the training threads (native/src/pool.h) give
 * the values of one thread bit for bit, at sizes that make several parts: each index is computed by
 * one thread in the same order whatever the split (the one-thread path is the one the kernel tests
 * check against their references). 3 threads as well as 2, so parts of unequal length and helpers
 * beyond the cores are covered on any machine.
 */

const setThreads = (n: number): void => {
  nativeContext()!.addon.setAutoThreads(n);
};

/** Every output of f (values and gradients), as plain arrays. */
function outputs(f: () => tf.Tensor[]): Float32Array[] {
  return tf.tidy(() => f().map((t) => t.dataSync() as Float32Array));
}

describe.skipIf(!addonBuilt)('native kernels across threads', () => {
  beforeAll(setupNative);
  afterAll(() => setThreads(availableParallelism()));

  // Inputs made once the wasm backend is up (beforeAll).
  let a: tf.Tensor,
    b: tf.Tensor,
    c: tf.Tensor,
    x: tf.Tensor,
    w: tf.Tensor1D,
    logits: tf.Tensor2D,
    targets: tf.Tensor1D,
    q: tf.Tensor4D,
    rope: RopeTables,
    kv: tf.Tensor4D,
    bias: tf.Tensor4D;
  beforeAll(() => {
    const rng = new Rng(21);
    a = toTensor(randArr(rng, [7, 50, 300])); // [7, 50, 300]
    b = toTensor(randArr(rng, [1, 50, 1])); // [1, 50, 1]
    c = toTensor(randArr(rng, [7, 50, 300])); // [7, 50, 300]
    x = toTensor(randArr(rng, [256, 128], 3)); // [N, D]
    w = toTensor(randArr(rng, [128])) as tf.Tensor1D; // [D]
    logits = toTensor(randArr(rng, [40, 2000], 4)) as tf.Tensor2D; // [N, V]
    targets = tf.tensor1d(
      Array.from({ length: 40 }, (_, i) => (i * 37) % 2000),
      'int32',
    ); // [N]
    q = toTensor(randArr(rng, [4, 64, 4, 32])) as tf.Tensor4D; // [B, T, H, hd]
    kv = toTensor(randArr(rng, [4, 64, 2, 32])) as tf.Tensor4D; // [B, T, KV, hd]
    const causal = tf.linalg.bandPart(tf.ones([64, 64]), -1, 0); // [T, T] lower triangle of ones
    // [B, 1, T, T]
    bias = tf.tile(tf.reshape(tf.mul(tf.sub(causal, 1), 1e9), [1, 1, 64, 64]), [4, 1, 1, 1]) as tf.Tensor4D;
    rope = ropeTables(
      tf.tensor2d(
        Array.from({ length: 256 }, (_, i) => i % 64),
        [4, 64],
        'int32',
      ),
      32,
      { type: 'default', theta: 10000 },
    ); // [B, T, 1, 16] x2
  });

  const cases: [string, () => tf.Tensor[]][] = [
    ['Add with a broadcast (rows split)', () => [tf.add(a, b)]],
    ['Multiply, same shapes (values split)', () => [tf.mul(a, c)]],
    ['Exp', () => [tf.exp(a)]],
    ['Softmax', () => [tf.softmax(tf.reshape(a, [350, 300]))]],
    ['AddN', () => [tf.addN([a, c, a])]],
    ['Select', () => [tf.where(tf.greater(a, c), a, c)]],
    [
      'RMSNorm and its gradients',
      () => {
        const dy = tf.cos(x); // [N, D]
        return [
          rmsNorm(x, w, 1e-6),
          ...tf.grads((p: tf.Tensor, v: tf.Tensor) => rmsNorm(p, v as tf.Tensor1D, 1e-6))([x, w], dy),
        ];
      },
    ],
    [
      'SwiGLU gate and its gradients',
      () => [siluGate(a, c), ...tf.grads((g: tf.Tensor, u: tf.Tensor) => siluGate(g, u))([a, c], tf.sin(a))],
    ],
    ['RoPE', () => [applyRope(q, rope)]],
    [
      'sequence attention (GQA) and the gradients of q, k and v',
      () => {
        const f = (a1: tf.Tensor, k1: tf.Tensor, v1: tf.Tensor): tf.Tensor =>
          sdpa(a1 as tf.Tensor4D, k1 as tf.Tensor4D, v1 as tf.Tensor4D, bias, 0.2, TRAIN_OPS); // [B, T, H, hd]
        return [f(q, kv, tf.cos(kv)), ...tf.grads(f)([q, kv, tf.cos(kv)], tf.sin(q))];
      },
    ],
    [
      'selected log-probs and their gradient',
      () => [
        selectedLogprobs(logits, targets),
        tf.grad((l: tf.Tensor) => tf.sum(selectedLogprobs(l as tf.Tensor2D, targets)))(logits),
      ],
    ],
  ];

  for (const [name, f] of cases) {
    it(`${name}: 2 and 3 threads give 1 thread's values`, () => {
      setThreads(1);
      const one = outputs(f);
      for (const n of [2, 3]) {
        setThreads(n);
        const got = outputs(f);
        got.forEach((arr, i) =>
          expect(
            Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength).equals(
              Buffer.from(one[i]!.buffer, one[i]!.byteOffset, one[i]!.byteLength),
            ),
          ).toBe(true),
        );
      }
    });
  }

  // sgemm may round a block of rows differently from the whole product (OpenBLAS picks its kernels
  // and blocking by size), so a split GEMM is checked to float32 rounding, not bit for bit: a wrong
  // offset or a lost block is an O(1) error.
  const gemms: [string, () => tf.Tensor[]][] = [
    [
      'MatMul split by row blocks, every transpose flag (one GEMM; 200 rows are not a whole number of blocks)',
      () => {
        const m = tf.reshape(a, [350, 300]); // [350, 300]
        const n = tf.reshape(c, [300, 350]); // [300, 350]
        const sq = tf.slice(m, [0, 0], [300, 300]); // [300, 300]
        return [
          tf.matMul(tf.slice(m, [0, 0], [200, 300]), n),
          tf.matMul(m, sq, false, true),
          tf.matMul(sq, n, true, false),
          tf.matMul(sq, sq, true, true),
        ];
      },
    ],
    [
      "MatMul of a decode step's 8 rows split by column blocks (an LM head), both flags of the weight",
      () => {
        const h = tf.slice(tf.reshape(a, [350, 300]), [0, 0], [8, 300]); // [8, 300]
        const w = tf.slice(tf.tile(tf.reshape(c, [300, 350]), [1, 6]), [0, 0], [300, 2000]); // [300, 2000]
        return [tf.matMul(h, w), tf.matMul(h, tf.reshape(w, [2000, 300]), false, true)];
      },
    ],
    [
      'BatchMatMul split by entries and by rows, with a broadcast batch',
      () => [
        tf.matMul(a, tf.reshape(c, [7, 300, 50])),
        tf.matMul(tf.reshape(a, [7, 1, 50, 300]), tf.reshape(tf.slice(c, [0, 0, 0], [2, 50, 300]), [1, 2, 300, 50])),
      ],
    ],
  ];

  for (const [name, f] of gemms) {
    it(`${name}: 2 and 3 threads give 1 thread's values to float32 rounding`, () => {
      setThreads(1);
      const one = outputs(f);
      for (const n of [2, 3]) {
        setThreads(n);
        outputs(f).forEach((arr, i) => expect(relErr(arr, one[i]!)).toBeLessThan(1e-6));
      }
    });
  }

  it('AdamW: 2 and 3 threads update weights and moments as 1 thread does', () => {
    const run = (n: number): Float32Array[] => {
      setThreads(n);
      const vars = [tf.variable(a.clone()), tf.variable(w.clone())];
      const m = vars.map((v) => tf.variable(tf.zerosLike(v)));
      const v2 = vars.map((v) => tf.variable(tf.zerosLike(v)));
      const grads = [c, tf.sin(w)];
      for (let step = 1; step <= 2; step++)
        nativeAdamW(vars, grads, m, v2, step, { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1 });
      const out = [...vars, ...m, ...v2].map((t) => t.dataSync() as Float32Array);
      tf.dispose([...vars, ...m, ...v2, grads[1]!]);
      return out;
    };
    const one = run(1);
    for (const n of [2, 3]) run(n).forEach((arr, i) => expect(Array.from(arr)).toEqual(Array.from(one[i]!)));
  });
});
