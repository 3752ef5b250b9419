/**
 * Optimizer section of `npm run bench`: one step of the trainers' AdamW (train/optim/adamw.ts) over
 * every variable of the bench model, op by op (eight tfjs ops per variable) and fused (one native
 * pass per variable, what createAdamW picks when the native kernels are loaded), interleaved so
 * machine load hits both alike; and how far apart the two leave the weights after the same steps.
 */
import * as tf from '@tensorflow/tfjs';
import { disableNativeKernels, enableNativeKernels } from '../../src/backend/native/register.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { hfConfigFor } from '../../src/model/config.ts';
import { AdamW } from '../../src/train/optim/adamw.ts';
import { BENCH_MODEL } from './model.ts';
import type { BenchRow } from './types.ts';
import { median } from './median.ts';

export async function benchOptimizer(quick = false): Promise<BenchRow[]> {
  if (enableNativeKernels().mode !== 'native') {
    disableNativeKernels();
    return [{ section: 'optimizer', metric: 'addon not loaded: fused AdamW skipped', value: 0, unit: '' }];
  }
  const models = [CausalLM.random(hfConfigFor(BENCH_MODEL), 0), CausalLM.random(hfConfigFor(BENCH_MODEL), 0)];
  const opts = { lr: 1e-3, weightDecay: 0.01 };
  const optimizers = [new AdamW({ ...opts, fused: false }), new AdamW({ ...opts, fused: true })];
  const times: number[][] = [[], []];
  try {
    const vars = models.map((m) => m.trainableVariables());
    // The same gradients for both (seeds from 1: tfjs draws an unseeded sample for seed 0).
    const gradsFor = (step: number, k: number): tf.NamedTensorMap =>
      Object.fromEntries(
        (vars[k] as tf.Variable[]).map((v, j) => [
          v.name,
          tf.randomNormal(v.shape, 0, 1, 'float32', 1000 * step + j + 1),
        ]),
      ); // [..shape]
    const steps = quick ? 4 : 20;
    for (let step = 0; step < steps + 1; step++) {
      for (let k = 0; k < 2; k++) {
        const grads = gradsFor(step, k);
        const t0 = performance.now();
        (optimizers[k] as AdamW).applyGradients(grads);
        await (vars[k] as tf.Variable[])[0]!.data(); // wait for the step to land
        if (step > 0) (times[k] as number[]).push(performance.now() - t0);
        tf.dispose(Object.values(grads));
      }
    }
    let maxDiff = 0;
    for (let j = 0; j < (vars[0] as tf.Variable[]).length; j++) {
      const d = tf.tidy(
        () => tf.max(tf.abs(tf.sub((vars[0] as tf.Variable[])[j]!, (vars[1] as tf.Variable[])[j]!))).dataSync()[0]!,
      ); // scalar
      maxDiff = Math.max(maxDiff, d);
    }
    const [ops, fused] = [median(times[0] as number[]), median(times[1] as number[])];
    return [
      { section: 'optimizer', metric: 'AdamW step, tfjs ops, median', value: ops, unit: 'ms' },
      { section: 'optimizer', metric: 'AdamW step, fused native, median', value: fused, unit: 'ms' },
      { section: 'optimizer', metric: 'AdamW fused speed-up', value: ops / fused, unit: 'x', target: '> 1' },
      {
        section: 'optimizer',
        metric: `weights apart after ${steps + 1} steps (max abs)`,
        value: maxDiff,
        unit: '',
        target: '< 1e-5',
      },
    ];
  } finally {
    for (const o of optimizers) o.dispose();
    for (const m of models) m.dispose();
    disableNativeKernels();
  }
}
