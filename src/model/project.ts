import * as tf from '@tensorflow/tfjs';
import type { OpSet } from './ops/op-set.ts';
import type { LoraLookup } from './lora.ts';
import type { WeightGetter } from './attention.ts';
import { dropout } from './ops/dropout.ts';

/**
 * One projection of the decoder: x W (+ b), plus its LoRA update scale * dropout(x) A B when the
 * lookup adapts this weight (lora.ts). The base product and the adapter's are kept apart, never
 * merged, so a rollout runs base + adapters as they are at that step and a reference disables them.
 */
export function project(
  ops: OpSet,
  x: tf.Tensor2D,
  w: WeightGetter,
  name: string,
  bias: tf.Tensor1D | undefined,
  lora: LoraLookup | undefined,
): tf.Tensor2D {
  const y = ops.linear(x, w(name) as tf.Tensor2D, bias); // [N, out]
  const ad = lora?.(name);
  if (!ad) return y;
  const xin = dropout(x, ad.dropout, ad.seed); // [N, in]
  const low = ops.linear(xin, w(ad.a) as tf.Tensor2D); // [N, r]
  return tf.add(y, tf.mul(ops.linear(low, w(ad.b) as tf.Tensor2D), ad.scale)) as tf.Tensor2D; // [N, out]
}
