import * as tf from '@tensorflow/tfjs';

type Engine = ReturnType<typeof tf.engine>;

/**
 * The bytes of the tensor data alive now and at most since `reset()`, each data buffer counted once.
 * `tf.memory().numBytes` counts a buffer once per tensor that views it (a reshape on the CPU
 * backends shares its input's data) and keeps no peak; a stage's peak RSS is set by the tensors
 * alive at its peak (a rollout's KV cache, an update's head chunk), not by those left at its end.
 * It follows the engine's own record of data buffers (`state.tensorInfo`): one added by
 * `trackTensor`, one removed by `removeDataId`. It counts the buffers made after it was constructed:
 * make it before the tensors it is to count.
 */
export class TensorPeak {
  private liveBytes = 0;
  private peakBytes = 0;
  /** The bytes of each buffer counted, by its data id. */
  private readonly counted = new WeakMap<object, number>();

  constructor(engine: Engine = tf.engine()) {
    const info = engine.state.tensorInfo;
    const track = engine.trackTensor.bind(engine);
    engine.trackTensor = (a, backend) => {
      const had = info.has(a.dataId);
      track(a, backend);
      const added = had ? undefined : info.get(a.dataId);
      if (added === undefined) return;
      this.counted.set(a.dataId, added.bytes);
      this.liveBytes += added.bytes;
      if (this.liveBytes > this.peakBytes) this.peakBytes = this.liveBytes;
    };
    const remove = engine.removeDataId.bind(engine);
    engine.removeDataId = (dataId, backend) => {
      remove(dataId, backend);
      const bytes = this.counted.get(dataId);
      if (bytes === undefined || info.has(dataId)) return;
      this.counted.delete(dataId);
      this.liveBytes -= bytes;
    };
  }

  /** Bytes of the data buffers alive now. */
  get live(): number {
    return this.liveBytes;
  }

  /** The most bytes alive at once since construction or the last `reset()`. */
  get peak(): number {
    return this.peakBytes;
  }

  /** Starts a new peak from what is alive now. */
  reset(): void {
    this.peakBytes = this.liveBytes;
  }
}
