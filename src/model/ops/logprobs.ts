import * as tf from '@tensorflow/tfjs';

/**
 * log softmax(logits)[target] per row, with the fused gradient dy * (onehot(target) - softmax)
 * (technique 4): the forward computes exp once and keeps the probabilities
 * for the backward, instead of autodiff through logSoftmax and a gather (two more Exps on wasm,
 * whose Exp kernel is slow, and a gather gradient).
 */
const selectedOp = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [logits, targets, save] = args as [tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
  const [n, v] = logits.shape;
  const m = tf.max(logits, 1, true); // [N, 1]
  const e = tf.exp(tf.sub(logits, m)); // [N, V]
  const s = tf.sum(e, 1, true); // [N, 1]
  const probs = tf.div(e, s); // [N, V]
  const logZ = tf.reshape(tf.add(tf.log(s), m), [n]); // [N]
  const flat = tf.add(tf.mul(tf.range(0, n, 1, 'int32'), tf.scalar(v, 'int32')), targets); // [N] row * V + target
  const picked = tf.gather(tf.reshape(logits, [n * v]), flat); // [N]
  save([probs, targets]);
  return {
    value: tf.sub(picked, logZ), // [N]
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sp, st] = saved as [tf.Tensor2D, tf.Tensor1D];
      // oneHot as int32 then cast: the wasm OneHot kernel writes int bits into a float32 output (tfjs 4.22).
      const g = tf.mul(tf.sub(tf.cast(tf.oneHot(st, v), 'float32'), sp), tf.expandDims(dy, 1)); // [N, V]
      return [g, tf.zerosLike(st)];
    },
  };
});

/** logits [N, V], targets [N] int32 -> log p(target) [N]; differentiable in logits. */
export function selectedLogprobs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  return selectedOp(logits, targets) as tf.Tensor1D;
}

/** Entropy of softmax(logits) per row [N, V] -> [N] (a metric; not meant to be differentiated). */
export function entropyFromLogits(logits: tf.Tensor2D): tf.Tensor1D {
  return tf.tidy(() => {
    const logp = tf.logSoftmax(logits); // [N, V]
    return tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1)) as tf.Tensor1D; // [N]
  });
}
