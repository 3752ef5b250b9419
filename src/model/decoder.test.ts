import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor } from './config.ts';
import { InferenceHead, lmHead } from './decoder.ts';
import { EMBED } from './weight-map.ts';

/**
 * The inference LM head both ways: the tied table through the GEMM's transpose flag (large tables on
 * the native kernels) and the table transposed once give the same logits bit for bit, and the
 * training head's to float rounding.
 */
let model: CausalLM;
beforeAll(async () => {
  await initBackend('wasm');
  model = CausalLM.random(
    hfConfigFor({ arch: 'qwen3', layers: 1, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 300 }),
    3,
  );
});
afterAll(() => model.dispose());

describe('InferenceHead', () => {
  it('gives the same logits through the transpose flag as transposed once', () => {
    const before = tf.memory().numTensors;
    const table = model.headWeight().w; // [V, D] tied
    const w = (name: string): tf.Tensor => {
      if (name !== EMBED) throw new Error(`unexpected weight ${name}`);
      return table;
    };
    const hidden = tf.randomNormal([5, 64], 0, 1, 'float32', 7) as tf.Tensor2D; // [N, D]
    const flag = new InferenceHead(tf.reshape(table, table.shape), true);
    const once = new InferenceHead(tf.transpose(table), false);
    const a = lmHead(model.config, w, hidden, flag); // [N, V]
    const b = lmHead(model.config, w, hidden, once); // [N, V]
    const train = lmHead(model.config, w, hidden); // [N, V]
    expect(a.shape).toEqual([5, 300]);
    expect(Array.from(a.dataSync())).toEqual(Array.from(b.dataSync()));
    const gap = tf.tidy(() => tf.max(tf.abs(tf.sub(a, train))).dataSync()[0] as number);
    expect(gap).toBeLessThan(1e-5);
    tf.dispose([hidden, a, b, train]);
    flag.dispose();
    once.dispose();
    expect(table.isDisposed).toBe(false);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('a small tied table is transposed once (the faster product at this size)', () => {
    const head = model.inferenceHead();
    expect(head.transposeB).toBe(false);
    expect(head.w.shape).toEqual([64, 300]);
    head.dispose();
  });
});
