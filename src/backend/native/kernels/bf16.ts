/**
 * Frozen weights in bfloat16 (native/src/bf16.cc): a packed weight is an int32 tensor whose every
 * element holds two bfloat16 values (little-endian: the low half is the even column), shape
 * [rows, cols / 2] for a [rows, cols] matrix. SharpBf16MatMul multiplies a float32 a [M, K] by one
 * (attrs.transposeB: the packed matrix is [N, K], else [K, N]) into float32 [M, N] without a float32
 * copy of it; SharpBf16Unpack decodes one to float32 [..., cols]. src/model/bf16.ts packs and
 * registers the product's gradient.
 */
import type { TensorInfo } from '@tensorflow/tfjs';
import { FUSED_KERNELS, float32, fused } from './fused.ts';
import { sizeOf, type KernelOverride } from './types.ts';

function packed(name: string, t: TensorInfo): void {
  if (t.dtype !== 'int32' || t.shape.length < 1)
    throw new Error(`${name}: expects a packed bfloat16 tensor (int32), got ${t.dtype} [${t.shape.join(', ')}]`);
}

/** inputs {a [M, K] float32, b packed}, attrs {transposeB} -> [M, N] float32. */
const bf16MatMul = fused('bf16MatMul', ({ inputs, backend, attrs }, ctx, call) => {
  const name = FUSED_KERNELS.bf16MatMul;
  const { a, b } = inputs as { a: TensorInfo; b: TensorInfo };
  float32(name, a);
  packed(name, b);
  const tb = attrs['transposeB'] === true;
  const [m, k] = a.shape as [number, number];
  const [rows, half] = b.shape as [number, number];
  const [bk, n] = tb ? [half * 2, rows] : [rows, half * 2];
  if (a.shape.length !== 2 || b.shape.length !== 2 || bk !== k) {
    throw new Error(
      `${name}: a [${a.shape.join(', ')}] and packed b [${b.shape.join(', ')}] (transposeB ${tb}) do not multiply`,
    );
  }
  const out = ctx.output(backend, [m, n], 'float32'); // [M, N]
  if (m * n > 0) call([a, b, out], [m, n, k, tb ? 1 : 0]);
  return out;
});

/** inputs {x packed [..., C/2]} -> float32 [..., C]. */
const bf16Unpack = fused('bf16Unpack', ({ inputs, backend }, ctx, call) => {
  const name = FUSED_KERNELS.bf16Unpack;
  const { x } = inputs as { x: TensorInfo };
  packed(name, x);
  const shape = [...x.shape.slice(0, -1), (x.shape[x.shape.length - 1] as number) * 2];
  const out = ctx.output(backend, shape, 'float32'); // [..., C]
  const n = sizeOf(shape);
  if (n > 0) call([x, out], [n]);
  return out;
});

export const bf16Native: KernelOverride[] = [bf16MatMul, bf16Unpack];
