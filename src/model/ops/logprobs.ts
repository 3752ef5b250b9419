import * as tf from '@tensorflow/tfjs';
import { FUSED_KERNELS } from '../../backend/native/index.ts';
import { fusedHere, runFused } from './fused.ts';
import { matmulWeight } from './linear.ts';

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

/**
 * logits [N, V], targets [N] int32 -> log p(target) [N]; differentiable in logits. One fused kernel
 * each way where the native kernels serve the backend (the backward recomputes the softmax from the
 * saved logits), else the custom-gradient composition above.
 */
export function selectedLogprobs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  if (fusedHere(FUSED_KERNELS.selectedLogprobs)) {
    return tf.tidy('selectedLogprobs', () =>
      runFused<tf.Tensor1D>(FUSED_KERNELS.selectedLogprobs, { logits, targets }),
    ); // [N]
  }
  return selectedLogprobsComposed(logits, targets);
}

/** The composition (backends without the fused kernel; the reference of its tests). */
export function selectedLogprobsComposed(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  return tf.tidy('selectedLogprobs', () => selectedOp(logits, targets)) as tf.Tensor1D; // named scope for tf.profile
}

/** Entropy of softmax(logits) per row [N, V] -> [N] (a metric; not meant to be differentiated). */
export function entropyFromLogits(logits: tf.Tensor2D): tf.Tensor1D {
  return tf.tidy(() => {
    const logp = tf.logSoftmax(logits); // [N, V]
    return tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1)) as tf.Tensor1D; // [N]
  });
}

export interface HeadWeight {
  /** Tied: embed_tokens [V, D]; untied: the stored lm_head [D, V]. */
  w: tf.Tensor2D;
  tied: boolean;
  /** False when the head is frozen (LoRA): no gradient is computed for it. */
  trainable: boolean;
}

/** Rows [start, start + n) of a 2-D or 1-D tensor. */
function rows<T extends tf.Tensor>(x: T, start: number, n: number): T {
  return (x.rank === 1 ? tf.slice(x, [start], [n]) : tf.slice(x, [start, 0], [n, x.shape[1] as number])) as T;
}

/** log softmax(logits)[target] [c] and, when asked, the entropy [c] of one chunk's logits [c, V]. */
function chunkStats(
  logits: tf.Tensor2D,
  targets: tf.Tensor1D,
  withEntropy: boolean,
): { lp: tf.Tensor1D; ent?: tf.Tensor1D } {
  const [n, v] = logits.shape;
  const m = tf.max(logits, 1, true); // [c, 1]
  const shifted = tf.sub(logits, m); // [c, V]
  const e = tf.exp(shifted); // [c, V]
  const s = tf.sum(e, 1, true); // [c, 1]
  const logZ = tf.reshape(tf.add(tf.log(s), m), [n]); // [c]
  const flat = tf.add(tf.mul(tf.range(0, n, 1, 'int32'), tf.scalar(v, 'int32')), targets); // [c] row * V + target
  const lp = tf.sub(tf.gather(tf.reshape(logits, [n * v]), flat), logZ) as tf.Tensor1D; // [c]
  if (!withEntropy) return { lp };
  // H = log Z - sum p * logits = log s - sum p * shifted, with p = e / s.
  const ent = tf.sub(
    tf.reshape(tf.log(s), [n]),
    tf.div(tf.sum(tf.mul(e, shifted), 1), tf.reshape(s, [n])),
  ) as tf.Tensor1D; // [c]
  return { lp, ent };
}

/**
 * log p(target) of each row of hidden [N, D] under the LM head, `chunk` rows at a time, forward and
 * backward, so no [N, V] logits tensor exists for the whole micro-batch: at a 150k vocabulary the
 * logits of 2,048 tokens are 1.2 GB of float32, and autodiff keeps them (and their softmax) for the
 * backward. The forward keeps only the [N] results; the backward recomputes each chunk's logits
 * and softmax and applies the fused gradient dy * (onehot(target) - softmax) (as selectedLogprobs)
 * to the hidden states and, when trainable, the head. With `withEntropy` the result is [N, 2]:
 * log-prob and the entropy of the row's distribution (a metric; no gradient flows through it).
 */
export function chunkedHeadLogprobs(
  hidden: tf.Tensor2D,
  head: HeadWeight,
  targets: tf.Tensor1D,
  chunk: number,
  withEntropy: boolean,
): tf.Tensor {
  if (!(Number.isInteger(chunk) && chunk > 0))
    throw new Error(`chunkedHeadLogprobs: chunk must be a positive integer, got ${chunk}`);
  const [n] = hidden.shape;
  // The head's products take the weight as it is stored, through the GEMM's transpose flags: a
  // tied [V, D] table transposed to [D, V] is a copy of 150M values per call, which on the native
  // backend's Transpose kernel took longer than all of a LoRA update's other kernels together.
  // [c, D] x [V, D]^T or [D, V] -> [c, V]
  const logitsOf = (hc: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D => matmulWeight(hc, w, head.tied);
  const forward = (h: tf.Tensor2D, w: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor => {
    const parts: tf.Tensor[] = [];
    for (let s = 0; s < n; s += chunk) {
      const c = Math.min(chunk, n - s);
      parts.push(
        tf.tidy(() => {
          const st = chunkStats(logitsOf(rows(h, s, c), w), rows(targets, s, c), withEntropy); // [c, V] -> [c]
          return st.ent ? tf.stack([st.lp, st.ent], 1) : st.lp; // [c, 2] or [c]
        }),
      );
    }
    const out = tf.concat(parts, 0); // [N] or [N, 2]
    tf.dispose(parts);
    return out;
  };
  // The backward reads only saved tensors: the caller's scope has freed everything else by then.
  const backward = (
    dy: tf.Tensor,
    h: tf.Tensor2D,
    w: tf.Tensor2D,
    targets: tf.Tensor1D,
    wantW: boolean,
  ): { dh: tf.Tensor2D; dw?: tf.Tensor2D } => {
    const dyLp = (withEntropy ? tf.reshape(tf.slice(dy, [0, 0], [n, 1]), [n]) : dy) as tf.Tensor1D; // [N]
    const dhs: tf.Tensor[] = [];
    // the head's gradient in its stored layout ([V, D] tied, [D, V] untied), summed over chunks
    let dwSum: tf.Tensor2D | undefined;
    for (let s = 0; s < n; s += chunk) {
      const c = Math.min(chunk, n - s);
      const { dh, part } = tf.tidy(() => {
        const hc = rows(h, s, c); // [c, D]
        const logits = logitsOf(hc, w); // [c, V]
        const probs = tf.softmax(logits); // [c, V]
        // [c, V]
        const onehot = tf.cast(tf.oneHot(tf.cast(rows(targets, s, c), 'int32'), logits.shape[1] as number), 'float32');
        const g = tf.mul(tf.sub(onehot, probs), tf.expandDims(rows(dyLp, s, c), 1)) as tf.Tensor2D; // [c, V]
        const dh = matmulWeight(g, w, !head.tied); // [c, V] x [V, D] or [D, V]^T -> [c, D]
        if (!wantW) return { dh, part: undefined };
        // g^T h [V, D] or h^T g [D, V]
        return { dh, part: (head.tied ? tf.matMul(g, hc, true, false) : tf.matMul(hc, g, true, false)) as tf.Tensor2D };
      });
      dhs.push(dh);
      if (part) {
        if (dwSum) {
          const next = tf.add(dwSum, part) as tf.Tensor2D; // stored layout
          tf.dispose([dwSum, part]);
          dwSum = next;
        } else dwSum = part;
      }
    }
    const dh = tf.concat(dhs, 0) as tf.Tensor2D; // [N, D]
    tf.dispose(dhs);
    return dwSum ? { dh, dw: dwSum } : { dh };
  };
  if (head.trainable) {
    const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
      const [h, w, t, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
      save([h, w, t]);
      return {
        value: forward(h, w, t),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
          const [sh, sw, st] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
          const { dh, dw } = backward(dy, sh, sw, st, true);
          return [dh, dw as tf.Tensor2D, tf.zerosLike(st)];
        },
      };
    });
    return tf.tidy('headLogprobs', () => op(hidden, head.w, targets)); // named scope for tf.profile
  }
  // A frozen head is not an input of the op: tfjs would otherwise want its [V, D] gradient.
  const w = head.w;
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [h, t, save] = args as [tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
    save([h, t]);
    return {
      value: forward(h, w, t),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sh, st] = saved as [tf.Tensor2D, tf.Tensor1D];
        return [backward(dy, sh, w, st, false).dh, tf.zerosLike(st)];
      },
    };
  });
  return tf.tidy('headLogprobs', () => op(hidden, targets));
}
