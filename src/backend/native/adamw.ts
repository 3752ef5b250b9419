import * as tf from '@tensorflow/tfjs';
import { activeNativeContext } from './active.ts';
import type { KernelBackend, NativeContext } from './context.ts';

/**
 * Fused AdamW step: one native pass per variable updates weight, first and second
 * moment in place (on the wasm heap, or in the `native` backend's arrays) (PyTorch torch.optim.AdamW semantics;
 * Loshchilov & Hutter 2019): w <- w (1 - lr wd);  m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2
 *   w <- w - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 * A buffer shared with another tensor (a tf.variable built from a tensor still alive, a reshape of
 * the weight kept as a snapshot, on the native backend a view of another tensor's array) is copied
 * first, so nothing outside the optimizer sees the update.
 * Without the addon the same update runs as tfjs ops (assign), with identical results up to float
 * rounding.
 *
 * Caveat (tfjs internals): the stock wasm matmul caches XNNPACK operators with packed weights per
 * tensor id; in-place updates are safe because the native BatchMatMul replaces it whenever the
 * addon (and so this path) is active.
 */
export interface AdamWHyper {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Decoupled weight decay; a number for all variables or one per variable (0 for norms/biases). */
  weightDecay: number | readonly number[];
}

export interface AdamWResult {
  /** 'native' when the fused kernel ran, 'tfjs' for the op-by-op fallback. */
  path: 'native' | 'tfjs';
  /** Variables whose shared buffer was copied before the in-place update. */
  copied: number;
}

function validate(
  vars: readonly tf.Variable[],
  grads: readonly tf.Tensor[],
  m: readonly tf.Variable[],
  v: readonly tf.Variable[],
  step: number,
  hp: AdamWHyper,
): void {
  const n = vars.length;
  if (grads.length !== n || m.length !== n || v.length !== n) {
    throw new Error(
      `nativeAdamW: ${n} variables but ${grads.length} grads, ${m.length} first and ${v.length} second moments`,
    );
  }
  if (!Number.isInteger(step) || step < 1)
    throw new Error(`nativeAdamW: step must be an integer >= 1 (bias correction), got ${step}`);
  if (Array.isArray(hp.weightDecay) && hp.weightDecay.length !== n)
    throw new Error(`nativeAdamW: weightDecay has ${hp.weightDecay.length} entries for ${n} variables`);
  for (let i = 0; i < n; i++) {
    const w = vars[i]!;
    for (const [what, t] of [
      ['grad', grads[i]!],
      ['m', m[i]!],
      ['v', v[i]!],
    ] as const) {
      if (t.dtype !== 'float32' || w.dtype !== 'float32')
        throw new Error(`nativeAdamW: ${w.name} and its ${what} must be float32 (got ${w.dtype}, ${t.dtype})`);
      if (t.size !== w.size || t.shape.join(',') !== w.shape.join(','))
        throw new Error(
          `nativeAdamW: ${what} of ${w.name} has shape [${t.shape.join(',')}], want [${w.shape.join(',')}]`,
        );
    }
  }
}

const wdOf = (hp: AdamWHyper, i: number): number =>
  typeof hp.weightDecay === 'number' ? hp.weightDecay : hp.weightDecay[i]!;

/**
 * Gives `x` a buffer of its own when another tensor shares it (its data id or its memory); returns whether it copied.
 */
function unshare(ctx: NativeContext, backend: KernelBackend, x: tf.Variable): boolean {
  if (backend.refCount(x.dataId) <= 1 && !ctx.sharesMemory(backend, x)) return false;
  const fresh = tf.tidy(() => tf.add(x, tf.scalar(0))); // [same shape], a new buffer
  x.assign(fresh);
  fresh.dispose();
  return true;
}

/** Whether nativeAdamW runs the fused kernel now (the addon's kernels serve the active backend). */
export function fusedAdamWReady(): boolean {
  return activeNativeContext() !== undefined;
}

/**
 * Fused steps run so far: they write weights in place (no new data id), so a cache of anything computed from the
 * weights compares this count.
 */
let inPlaceSteps = 0;

export function inPlaceWeightUpdates(): number {
  return inPlaceSteps;
}

export function nativeAdamW(
  vars: readonly tf.Variable[],
  grads: readonly tf.Tensor[],
  m: readonly tf.Variable[],
  v: readonly tf.Variable[],
  step: number,
  hp: AdamWHyper,
): AdamWResult {
  validate(vars, grads, m, v, step, hp);
  const ctx = activeNativeContext();
  if (!ctx) {
    adamWOps(vars, grads, m, v, step, hp);
    return { path: 'tfjs', copied: 0 };
  }
  const backend = tf.backend() as unknown as KernelBackend;
  inPlaceSteps += 1;
  let copied = 0;
  for (const x of [...vars, ...m, ...v]) if (unshare(ctx, backend, x)) copied++;
  const A = ctx.args;
  const perCall = Math.floor((A.length - 6) / 6);
  for (let start = 0; start < vars.length; start += perCall) {
    const count = Math.min(perCall, vars.length - start);
    A[0] = count;
    A[1] = hp.lr;
    A[2] = hp.beta1;
    A[3] = hp.beta2;
    A[4] = hp.eps;
    A[5] = step;
    for (let k = 0; k < count; k++) {
      const i = start + k;
      const base = 6 + 6 * k;
      A[base] = ctx.ref(backend, vars[i]!);
      A[base + 1] = ctx.ref(backend, grads[i]!);
      A[base + 2] = ctx.ref(backend, m[i]!);
      A[base + 3] = ctx.ref(backend, v[i]!);
      A[base + 4] = vars[i]!.size;
      A[base + 5] = wdOf(hp, i);
    }
    ctx.run(backend, 'adamw', 'AdamW');
  }
  return { path: 'native', copied };
}

/** The same update as tfjs ops (no addon, or another backend). */
function adamWOps(
  vars: readonly tf.Variable[],
  grads: readonly tf.Tensor[],
  m: readonly tf.Variable[],
  v: readonly tf.Variable[],
  step: number,
  hp: AdamWHyper,
): void {
  const bc1 = 1 - Math.pow(hp.beta1, step);
  const bc2 = 1 - Math.pow(hp.beta2, step);
  tf.tidy(() => {
    vars.forEach((w, i) => {
      const g = grads[i]!;
      const mi = tf.add(tf.mul(m[i]!, hp.beta1), tf.mul(g, 1 - hp.beta1)); // [..w]
      const vi = tf.add(tf.mul(v[i]!, hp.beta2), tf.mul(tf.square(g), 1 - hp.beta2)); // [..w]
      const upd = tf.div(tf.div(mi, bc1), tf.add(tf.sqrt(tf.div(vi, bc2)), hp.eps)); // [..w]
      const decayed = tf.mul(w, 1 - hp.lr * wdOf(hp, i)); // [..w]
      m[i]!.assign(mi);
      v[i]!.assign(vi);
      w.assign(tf.sub(decayed, tf.mul(upd, hp.lr)));
    });
  });
}
