import * as tf from '@tensorflow/tfjs';
import { Rng } from '../src/random/rng.ts';
import { initBackend } from '../src/backend/select.ts';
import { loadAddon } from '../src/backend/native/addon.ts';
import { disableNativeKernels, enableNativeKernels } from '../src/backend/native/register.ts';
import { relErr, size, type Arr } from './reference/kernels.ts';

/**
 * Shared set-up of the native kernel parity tests (test-only helper). With SHARP_NATIVE=prebuilt or
 * =local the tests are about that binary: it failing to load fails them rather than skipping them.
 */
const load = loadAddon();
if (!load.addon && (process.env['SHARP_NATIVE'] === 'prebuilt' || process.env['SHARP_NATIVE'] === 'local')) {
  throw new Error(`SHARP_NATIVE=${process.env['SHARP_NATIVE']}: the native addon did not load: ${load.reason}`);
}
export const addonBuilt = load.addon !== undefined;

/** wasm backend with the native overrides installed; returns the stock kernel functions replaced. */
export async function setupNative(): Promise<void> {
  await initBackend('wasm');
  disableNativeKernels();
  const status = enableNativeKernels();
  if (status.mode !== 'native') throw new Error(`native kernels not installed: ${status.reason}`);
}

/** Standard normal values rounded to float32 (so the reference sees exactly what the kernel sees). */
export function randArr(rng: Rng, shape: number[], scale = 1): Arr {
  const data = new Float64Array(size(shape));
  for (let i = 0; i < data.length; i++) {
    const u = Math.max(rng.float(), 1e-12);
    data[i] = Math.fround(scale * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.float()));
  }
  return { data, shape };
}

export const toTensor = (a: Arr): tf.Tensor => tf.tensor(Float32Array.from(a.data), a.shape, 'float32');

/** Shape must match exactly and the normwise relative error stay <= tol (1e-5). */
export function expectClose(got: tf.Tensor, want: Arr, tol = 1e-5): number {
  if (got.shape.join(',') !== want.shape.join(','))
    throw new Error(`shape [${got.shape.join(',')}] != reference [${want.shape.join(',')}]`);
  const e = relErr(got.dataSync(), want.data);
  if (!(e <= tol)) throw new Error(`relative error ${e.toExponential(2)} > ${tol} for shape [${want.shape.join(',')}]`);
  return e;
}

/** Random dims in [lo, hi]. */
export const dims = (rng: Rng, n: number, lo: number, hi: number): number[] =>
  Array.from({ length: n }, () => rng.int(lo, hi));

/** Values and gradients (w.r.t. every input) of f and g at the same inputs, upstream gradient dy. */
export function compareFused(
  f: (...xs: tf.Tensor[]) => tf.Tensor,
  g: (...xs: tf.Tensor[]) => tf.Tensor,
  inputs: tf.Tensor[],
  rng: Rng,
): number[] {
  const out = f(...inputs);
  const dy = toTensor(randArr(rng, out.shape)); // same shape as out
  const errs: number[] = [];
  const gotV = out.dataSync();
  const wantV = g(...inputs).dataSync();
  errs.push(relErr(gotV, wantV));
  const gotG = tf.grads((...xs: tf.Tensor[]) => f(...xs))(inputs, dy);
  const wantG = tf.grads((...xs: tf.Tensor[]) => g(...xs))(inputs, dy);
  gotG.forEach((t, i) => errs.push(relErr(t.dataSync(), wantG[i]!.dataSync())));
  tf.dispose([out, dy, ...gotG, ...wantG]);
  return errs;
}
