/**
 * Frozen base weights kept in bfloat16 and computed in float32 (train.lora.baseDtype: bfloat16):
 * half the memory of a LoRA run's base. A packed weight is an int32 tensor holding two bfloat16
 * values per element (the `native` kernels' layout, src/backend/native/kernels/bf16.ts), so no
 * float32 kernel of tfjs can read it by mistake and tf.memory() counts its real bytes. Products with
 * it decode a panel at a time (no float32 copy of the weight); rows gathered from a packed embedding
 * are decoded after the gather. A weight stored in BF16 (as Qwen3's checkpoints are) packs exactly.
 */
import * as tf from '@tensorflow/tfjs';
import { FUSED_KERNELS } from '../backend/native/index.ts';
import { fusedHere } from './ops/fused.ts';

/** float32 values -> bfloat16 pairs in int32 elements (round to nearest, ties to even; NaN stays NaN). */
export function packBf16(values: Float32Array): Int32Array {
  if (values.length % 2 !== 0) throw new Error(`packBf16: needs an even number of values, got ${values.length}`);
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Int32Array(values.length / 2);
  const half = new Uint16Array(out.buffer);
  for (let i = 0; i < bits.length; i++) {
    const u = bits[i] as number;
    if ((u & 0x7f800000) === 0x7f800000 && (u & 0x7fffff) !== 0)
      half[i] = (u >>> 16) | 0x40; // quiet NaN
    else half[i] = (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
  }
  return out;
}

/** The inverse decode on the host (exact): bfloat16 pairs -> float32. */
export function unpackBf16(packed: Int32Array): Float32Array {
  const half = new Uint16Array(packed.buffer, packed.byteOffset, packed.length * 2);
  const out = new Float32Array(half.length);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < half.length; i++) bits[i] = (half[i] as number) << 16;
  return out;
}

/** Whether the active backend has the packed kernels. */
export function bf16Ready(): boolean {
  return fusedHere(FUSED_KERNELS.bf16MatMul) && fusedHere(FUSED_KERNELS.bf16Unpack);
}

/** Whether `w` is a packed bfloat16 weight. */
export function isPacked(w: tf.Tensor): boolean {
  return w.dtype === 'int32';
}

tf.registerGradient({
  kernelName: FUSED_KERNELS.bf16MatMul,
  inputsToSave: ['b'],
  gradFunc: (dy, saved, attrs) => {
    const [b] = saved as [tf.Tensor];
    return {
      // dA = dY op(B)^T: the same packed matrix with the other orientation. [M, K]
      a: () => bf16MatMul(dy as tf.Tensor2D, b as tf.Tensor2D, !attrs['transposeB']),
      b: () => {
        throw new Error(`${FUSED_KERNELS.bf16MatMul}: a frozen bfloat16 weight takes no gradient`);
      },
    };
  },
});

/** a [M, K] float32 @ op(packed b) -> [M, N]: b is [K, N/2 packed] or, with transposeB, [N, K/2 packed]. */
export function bf16MatMul(a: tf.Tensor2D, b: tf.Tensor2D, transposeB: boolean): tf.Tensor2D {
  return tf.engine().runKernel(FUSED_KERNELS.bf16MatMul, { a, b }, { transposeB }) as tf.Tensor2D; // [M, N]
}

/** A packed tensor [..., C/2] decoded to float32 [..., C]. */
export function unpackTensor(x: tf.Tensor): tf.Tensor {
  return tf.engine().runKernel(FUSED_KERNELS.bf16Unpack, { x }, {}) as tf.Tensor; // [..., C]
}
