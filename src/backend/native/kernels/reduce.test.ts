import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../../random/rng.ts';
import { reduceView } from './reduce.ts';
import { reduceRef, softmaxRef, type ReduceOp } from '../../../../test/reference/kernels.ts';
import { addonBuilt, dims, expectClose, randArr, setupNative, toTensor } from '../../../../test/native-testkit.ts';
import { disableNativeKernels } from '../register.ts';

const OPS: [ReduceOp, (x: tf.Tensor, axis: number[], keep: boolean) => tf.Tensor][] = [
  ['sum', tf.sum],
  ['max', tf.max],
  ['min', tf.min],
  ['mean', tf.mean],
  ['prod', tf.prod],
];

describe('reduceView', () => {
  it('maps contiguous axes to [outer, red, inner]', () => {
    expect(reduceView([2, 3, 4, 5], [1, 2])).toEqual([2, 12, 5]);
    expect(reduceView([2, 3, 4], [])).toEqual([24, 1, 1]);
    expect(reduceView([2, 3, 4], [0, 2])).toBeUndefined();
  });
});

describe.skipIf(!addonBuilt)('native reductions and Softmax vs float64', () => {
  beforeAll(setupNative);

  it('every reduction on random shapes and axis sets, keepDims both ways', () => {
    const rng = new Rng(31);
    const axisSets = [[0], [1], [2], [0, 1], [1, 2], [0, 2], [0, 1, 2]];
    for (const [name, op] of OPS)
      for (const axes of axisSets) {
        const x0 = randArr(rng, dims(rng, 3, 1, 9));
        // prod: values near 1 keep the product of up to 729 terms finite and well conditioned.
        const x = name === 'prod' ? { data: x0.data.map((v) => Math.fround(1 + 0.01 * v)), shape: x0.shape } : x0;
        const keep = rng.int(0, 1) === 1;
        const got = tf.tidy(() => op(toTensor(x), axes, keep));
        try {
          expectClose(got, reduceRef(name, x, axes, keep));
        } catch (err) {
          throw new Error(`${name} axes [${axes.join(',')}] of [${x.shape.join(',')}]: ${(err as Error).message}`);
        }
        got.dispose();
      }
  });

  it('sums a long row to within float32 rounding (double accumulation)', () => {
    const rng = new Rng(32);
    const x = randArr(rng, [2, 100000]);
    const got = tf.tidy(() => tf.sum(toTensor(x), 1));
    expectClose(got, reduceRef('sum', x, [1], false), 1e-6);
    got.dispose();
  });

  it('Softmax over the last dim, large logits included', () => {
    const rng = new Rng(33);
    for (const shape of [
      [4, 7],
      [2, 3, 2000],
      [1, 1],
    ]) {
      const x = randArr(rng, shape, 20);
      const got = tf.tidy(() => tf.softmax(toTensor(x)));
      expectClose(got, softmaxRef(x));
      const sums = tf.tidy(() => tf.sum(got, -1).dataSync());
      for (const s of sums) expect(Math.abs(s - 1)).toBeLessThan(1e-5);
      got.dispose();
    }
  });
});

describe.skipIf(!addonBuilt)('native Cumsum on the wasm heap', () => {
  beforeAll(setupNative);

  it('equals the wasm backend’s own Cumsum bit for bit (a sampling CDF, inner and outer axes)', async () => {
    const rng = new Rng(34);
    const cases: [number[], number, boolean, boolean][] = [
      [[8, 2000], 1, false, false],
      [[3, 5, 7], 1, false, false],
      [[3, 5, 7], 2, true, true],
      [[4, 300], 1, true, false],
      [[4, 300], 0, false, true],
    ];
    const xs = cases.map(([shape]) => randArr(rng, shape));
    const run = (): number[][] =>
      cases.map(([, axis, exclusive, reverse], i) =>
        tf.tidy(() => Array.from(tf.cumsum(toTensor(xs[i]!), axis, exclusive, reverse).dataSync())),
      );
    const stockFn = (): unknown => tf.getKernel('Cumsum', 'wasm')?.kernelFunc;
    const nativeFn = stockFn();
    const got = run();
    disableNativeKernels();
    expect(stockFn()).not.toBe(nativeFn);
    const want = run();
    await setupNative();
    for (let i = 0; i < cases.length; i++) expect(got[i]).toEqual(want[i]);
  });
});
