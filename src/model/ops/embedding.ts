import * as tf from '@tensorflow/tfjs';
import { nativeKernelHere } from '../../backend/native/index.ts';

/**
 * Row gather with a custom gradient (technique 1), for the token embedding and for any rows of a
 * 2-D tensor gathered under a tape (the kept rows of the LM head's input). tf.gather's own
 * gradient is UnsortedSegmentSum, which the wasm backend does not register and which took 35 s of a
 * 45 s step on cpu. Where the native kernels serve it (one pass over dy), the gradient is that
 * kernel; elsewhere a one-hot matmul over the *distinct* ids of the batch, scattered into the
 * table: onehot [U, N] @ dy [N, D] -> rows [U, D] -> scatterND into [V, D]. Using distinct ids
 * keeps it small for 150k-token vocabularies (a dense [V, N] one-hot would not be).
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
      const { values, indices } = tf.unique(sids); // values [U] distinct ids, indices [N] position of each id in values
      const u = values.shape[0];
      // oneHot + explicit transpose: a broadcasting Equal [U,1] vs [1,N] takes ~400 ms on wasm; oneHot is
      // int32 then cast because the wasm OneHot kernel writes int bits into float32 outputs (tfjs 4.22).
      // tf.oneHot wants a depth of at least 2: a batch of one distinct id gets a spare, unused column.
      const depth = Math.max(u, 2);
      const oneHotT = tf.transpose(tf.cast(tf.oneHot(indices, depth), 'float32')); // [N, U'] -> [U', N]
      const all = tf.matMul(oneHotT, dy as tf.Tensor2D); // [U', N] @ [N, D] -> [U', D]
      const rows = depth === u ? all : tf.slice(all, [0, 0], [u, all.shape[1] as number]); // [U, D]
      const dTable = tf.scatterND(tf.expandDims(values, 1), rows, [vocab, rows.shape[1] as number]); // [V, D]
      return [dTable, tf.zerosLike(sids)];
    },
  };
});

/** table [V, D], ids [N] int32 -> [N, D]. */
export function gatherRows(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  return gatherRowsOp(table, ids) as tf.Tensor2D; // [N, D]
}

/** table [V, D], ids [N] int32 -> [N, D]. */
export function embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  return tf.tidy('embed', () => gatherRows(table, ids)); // [N, D]; named scope for tf.profile
}
