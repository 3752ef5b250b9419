import * as tf from '@tensorflow/tfjs';

/**
 * tf.tidy for results that are objects of tensors (logits plus a KV cache): tidy keeps every
 * tensor reachable from the result, but its TensorContainer type does not admit interfaces
 * without an index signature.
 */
export function tidyObject<T>(fn: () => T): T {
  return tf.tidy(fn as unknown as () => tf.TensorContainer) as unknown as T;
}
