import * as tf from '@tensorflow/tfjs';

/**
 * Rotary position embedding in the Hugging Face rotate_half convention (HF checkpoints are permuted
 * for it): out = x * cos + rotate_half(x) * sin, rotate_half([x1, x2]) = [-x2, x1], with
 * cos/sin of pos * theta^(-2j/d) for j < d/2.
 */
export interface RopeTables {
  cos: tf.Tensor4D; // [B, T, 1, hd/2]
  sin: tf.Tensor4D; // [B, T, 1, hd/2]
}

/** Inverse frequencies theta^(-2j/d), j < d/2, as HF computes them (float32). */
export function inverseFrequencies(headDim: number, theta: number): Float32Array {
  const half = headDim / 2;
  const inv = new Float32Array(half);
  for (let j = 0; j < half; j++) inv[j] = 1 / Math.pow(theta, (2 * j) / headDim);
  return inv;
}

/** positions [B, T] (float32 token positions) -> cos/sin tables broadcastable over heads. */
export function ropeTables(positions: tf.Tensor2D, headDim: number, theta: number): RopeTables {
  const [b, t] = positions.shape;
  const inv = tf.tensor1d(inverseFrequencies(headDim, theta)); // [hd/2]
  const ang = tf.mul(tf.reshape(positions, [b, t, 1, 1]), inv); // [B, T, 1, hd/2]
  return { cos: tf.cos(ang) as tf.Tensor4D, sin: tf.sin(ang) as tf.Tensor4D };
}

/** x [B, T, H, hd] -> rotated [B, T, H, hd]. */
export function applyRope(x: tf.Tensor4D, r: RopeTables): tf.Tensor4D {
  const [x1, x2] = tf.split(x, 2, 3) as [tf.Tensor4D, tf.Tensor4D]; // [B, T, H, hd/2] each
  const o1 = tf.sub(tf.mul(x1, r.cos), tf.mul(x2, r.sin)); // [B, T, H, hd/2]
  const o2 = tf.add(tf.mul(x2, r.cos), tf.mul(x1, r.sin)); // [B, T, H, hd/2]
  return tf.concat([o1, o2], 3) as tf.Tensor4D; // [B, T, H, hd]
}
