import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import { Rng } from '../../random/rng.ts';
import { initBackend } from '../select.ts';
import { nativeAdamW } from './adamw.ts';
import { addonBuilt } from '../../../test/native-testkit.ts';
import { disableNativeKernels, enableFallbackKernels, enableNativeKernels } from './register.ts';

/**
 * Training gives the same loss curve with and without the addon (within 1e-4)
 * and a flat tensor count. A smaller model than the bench's (d=64, vocab 512, batch 4 x 32) keeps the
 * 2 x 50 steps inside the test budget; the bench (scripts/bench/native.ts) runs the full-size one.
 */
const CFG = hfConfigFor({
  arch: 'llama',
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 4,
  intermediate: 172,
  vocab: 512,
  tieEmbeddings: true,
});
const STEPS = 50;

async function lossCurve(): Promise<{ losses: number[]; leak: number; path: string }> {
  const model = CausalLM.random(CFG, 3);
  const vars = model.trainableVariables();
  const m = vars.map((x) => tf.variable(tf.zerosLike(x), false));
  const v = vars.map((x) => tf.variable(tf.zerosLike(x), false));
  const rng = new Rng(4);
  const ids = tf.tensor2d(
    Array.from({ length: 4 * 32 }, () => rng.int(0, 511)),
    [4, 32],
    'int32',
  ); // [B, T]
  const mask = tf.ones([4, 32], 'int32') as tf.Tensor2D; // [B, T]
  const losses: number[] = [];
  let start = 0;
  let path = '';
  for (let t = 1; t <= STEPS; t++) {
    const { value, grads } = tf.variableGrads(
      () => tf.neg(tf.mean(tokenLogprobs(model, ids, mask))) as tf.Scalar,
      vars,
    );
    path = nativeAdamW(
      vars,
      vars.map((x) => grads[x.name]!),
      m,
      v,
      t,
      { lr: 3e-3, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.01 },
    ).path;
    losses.push((await value.data())[0]!);
    tf.dispose([value, ...Object.values(grads)]);
    if (t === 2) start = tf.memory().numTensors;
  }
  const leak = tf.memory().numTensors - start;
  model.dispose();
  tf.dispose([...m, ...v, ids, mask]);
  return { losses, leak, path };
}

describe.skipIf(!addonBuilt)('training with and without the addon', () => {
  beforeAll(async () => {
    await initBackend('wasm');
  });
  afterAll(() => disableNativeKernels());

  it('50 AdamW steps give the same loss curve (within 1e-4) and no tensor leak', async () => {
    disableNativeKernels();
    expect(enableNativeKernels().mode).toBe('native');
    const nat = await lossCurve();
    expect(nat.path).toBe('native');
    expect(enableFallbackKernels().mode).toBe('fallback');
    const fb = await lossCurve();
    expect(fb.path).toBe('tfjs');
    // The model learns the fixed batch: the curve must fall (else equal curves would prove nothing).
    expect(nat.losses[STEPS - 1]!).toBeLessThan(nat.losses[0]! - 1);
    const diff = Math.max(...nat.losses.map((l, i) => Math.abs(l - fb.losses[i]!)));
    expect(diff).toBeLessThanOrEqual(1e-4);
    expect(nat.leak).toBe(0);
    expect(fb.leak).toBe(0);
  });
});
