import * as tf from '@tensorflow/tfjs';
import { nativeKernelHere } from '../../backend/native/index.ts';
import { isPacked, unpackTensor } from '../bf16.ts';

/**
 * Row gather with a custom gradient (technique 1), for the token embedding and for any rows of a
 * 2-D tensor gathered under a tape (the kept rows of the LM head's input). tf.gather's own
 * gradient is UnsortedSegmentSum, which the wasm backend does not register and which took 35 s of a
 * 45 s step on cpu. Where the native kernels serve it (one pass over dy), the gradient is that
 * kernel; elsewhere ScatterNd of dy's rows into the table, which sums the rows of repeated ids (one
 * pass over dy; on wasm 4x faster than a one-hot matmul over the distinct ids).
 */
const gatherRowsOp = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [table, ids, save] = args as [tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
  save([ids]);
  const vocab = table.shape[0];
  return {
    value: tf.gather(table, ids), // [N, D]
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sids] = saved as [tf.Tensor1D];
      // ids are integer inputs: their "gradient" is zeros of their shape (tfjs requires one per input).
      // [V, D]
      if (nativeKernelHere('UnsortedSegmentSum')) return [tf.unsortedSegmentSum(dy, sids, vocab), tf.zerosLike(sids)];
      const d = dy.shape[1] as number;
      const dTable = tf.scatterND(tf.expandDims(sids, 1), dy, [vocab, d]); // [N, 1] ids, [N, D] rows -> [V, D]
      return [dTable, tf.zerosLike(sids)];
    },
  };
});

/** table [V, D], ids [N] int32 -> [N, D]. */
export function gatherRows(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  return gatherRowsOp(table, ids) as tf.Tensor2D; // [N, D]
}

/** table [V, D], ids [N] int32 -> [N, D]; a packed bfloat16 table's rows are decoded after the gather. */
export function embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  return tf.tidy('embed', () => (isPacked(table) ? gatherPacked(table, ids) : gatherRows(table, ids))); // [N, D]
}

/** Rows of a packed bfloat16 table [V, D/2] at ids [N] -> float32 [N, D] (a frozen table: no gradient). */
export function gatherPacked(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  return unpackTensor(tf.gather(table, ids)) as tf.Tensor2D; // [N, D]
}
