import * as tf from '@tensorflow/tfjs';

/**
 * Measured square matmul throughput on the active backend (for `sharp doctor`): a warm-up run
 * (which on a GPU includes kernel JIT), then the median of timed runs.
 */
export async function matmulGflops(n = 256, runs = 5): Promise<{ gflops: number; warmupMs: number; medianMs: number }> {
  const a = tf.randomNormal([n, n], 0, 1, 'float32', 1); // [n, n]
  const b = tf.randomNormal([n, n], 0, 1, 'float32', 2); // [n, n]
  const timeOnce = async (): Promise<number> => {
    const t0 = performance.now();
    const c = tf.matMul(a, b); // [n, n]
    await c.data();
    c.dispose();
    return performance.now() - t0;
  };
  const warmupMs = await timeOnce();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await timeOnce());
  a.dispose();
  b.dispose();
  times.sort((x, y) => x - y);
  const medianMs = times[Math.floor(times.length / 2)] as number;
  return { gflops: (2 * n * n * n) / (medianMs * 1e6), warmupMs, medianMs };
}
