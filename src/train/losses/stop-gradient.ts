import * as tf from '@tensorflow/tfjs';

/**
 * The identity whose gradient is zero (PyTorch's `detach`, TensorFlow's `stop_gradient`; tfjs has no
 * such op). A GRPO update of one epoch uses it for pi_old: the policy that sampled the batch is the
 * policy being differentiated, so pi_old's log-probs are the forward's own values without a gradient,
 * and a second forward pass to recompute them would be wasted.
 */
const stopGradientOp = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x] = args as [tf.Tensor];
  return {
    value: tf.clone(x), // same shape as x
    gradFunc: (dy: tf.Tensor) => [tf.zerosLike(dy)],
  };
});

/** x's values, cut off from the gradient tape. */
export function stopGradient<T extends tf.Tensor>(x: T): T {
  return stopGradientOp(x) as T;
}
