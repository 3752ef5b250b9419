import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from '../src/model/causal-lm.ts';

/** Largest absolute difference between two models' weights of the same names (test helper). */
export function maxWeightDiff(a: CausalLM, b: CausalLM): number {
  const wb = b.namedVariables();
  let max = 0;
  for (const [name, va] of a.namedVariables()) {
    const vb = wb.get(name);
    if (!vb) throw new Error(`maxWeightDiff: '${name}' is missing from the second model`);
    const d = tf.tidy(() => tf.max(tf.abs(tf.sub(va, vb))).dataSync()[0] as number); // scalar
    max = Math.max(max, d);
  }
  if (wb.size !== a.namedVariables().size) throw new Error('maxWeightDiff: the models hold different weights');
  return max;
}
