import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../../random/rng.ts';
import { binaryRef, relErr, type Arr } from '../../../../test/reference/kernels.ts';
import { addonBuilt, expectClose, randArr, setupNative, toTensor } from '../../../../test/native-testkit.ts';

const BIN: [string, (a: tf.Tensor, b: tf.Tensor) => tf.Tensor, (x: number, y: number) => number][] = [
  ['Add', tf.add, (x, y) => x + y],
  ['Sub', tf.sub, (x, y) => x - y],
  ['Multiply', tf.mul, (x, y) => x * y],
  ['RealDiv', tf.div, (x, y) => x / y],
  ['Maximum', tf.maximum, Math.max],
  ['Minimum', tf.minimum, Math.min],
  ['SquaredDifference', tf.squaredDifference, (x, y) => (x - y) * (x - y)],
  ['Pow', tf.pow, Math.pow],
];

const UN: [string, (x: tf.Tensor) => tf.Tensor, (x: number) => number, 'any' | 'pos'][] = [
  ['Exp', tf.exp, Math.exp, 'any'],
  ['Log', tf.log, Math.log, 'pos'],
  ['Neg', tf.neg, (x) => -x, 'any'],
  ['Sqrt', tf.sqrt, Math.sqrt, 'pos'],
  ['Rsqrt', tf.rsqrt, (x) => 1 / Math.sqrt(x), 'pos'],
  ['Square', tf.square, (x) => x * x, 'any'],
  ['Sigmoid', tf.sigmoid, (x) => 1 / (1 + Math.exp(-x)), 'any'],
  ['Tanh', tf.tanh, Math.tanh, 'any'],
  ['Abs', tf.abs, Math.abs, 'any'],
  ['Relu', tf.relu, (x) => Math.max(x, 0), 'any'],
  ['Reciprocal', tf.reciprocal, (x) => 1 / x, 'pos'],
  ['Sin', tf.sin, Math.sin, 'any'],
  ['Cos', tf.cos, Math.cos, 'any'],
  ['Log1p', tf.log1p, Math.log1p, 'pos'],
  ['Softplus', tf.softplus, (x) => Math.log1p(Math.exp(x)), 'any'],
];

const pos = (a: Arr): Arr => ({ data: a.data.map((v) => Math.fround(Math.abs(v) + 0.5)), shape: a.shape });

describe.skipIf(!addonBuilt)('native elementwise kernels vs float64', () => {
  beforeAll(setupNative);

  it('binary ops under numpy broadcasting, including mixed [2,1] x [1,3]', () => {
    const rng = new Rng(11);
    const shapes: [number[], number[]][] = [
      [
        [5, 7],
        [5, 7],
      ],
      [
        [2, 1],
        [1, 3],
      ],
      [[4, 6, 8], [8]],
      [[8], [4, 6, 8]],
      [
        [3, 1, 5],
        [1, 4, 1],
      ],
      [[2, 3, 4, 5], []],
      [[], [2, 3]],
      [
        [6, 1],
        [6, 9],
      ],
      [
        [2, 1, 3, 1, 2],
        [1, 4, 1, 5, 2],
      ],
    ];
    for (const [name, op, ref] of BIN)
      for (const [sa, sb] of shapes) {
        // Pow: positive base keeps real results; RealDiv: divisor away from 0.
        const a = name === 'Pow' ? pos(randArr(rng, sa)) : randArr(rng, sa);
        const b = name === 'RealDiv' ? pos(randArr(rng, sb)) : randArr(rng, sb);
        const got = tf.tidy(() => op(toTensor(a), toTensor(b)));
        try {
          expectClose(got, binaryRef(ref, a, b));
        } catch (err) {
          throw new Error(`${name} [${sa.join(',')}] x [${sb.join(',')}]: ${(err as Error).message}`);
        }
        got.dispose();
      }
  });

  it('int32 arithmetic keeps the stock kernel (integer results)', () => {
    const got = tf.tidy(() => tf.add(tf.tensor([1, 2], [2], 'int32'), tf.tensor([3], [1], 'int32')));
    expect(got.dtype).toBe('int32');
    expect(Array.from(got.dataSync())).toEqual([4, 5]);
    got.dispose();
  });

  it('unary ops', () => {
    const rng = new Rng(12);
    for (const [name, op, ref, domain] of UN) {
      const x0 = randArr(rng, [3, 5, 67], 3);
      const x = domain === 'pos' ? pos(x0) : x0;
      const got = tf.tidy(() => op(toTensor(x)));
      const want = { data: x.data.map(ref), shape: x.shape };
      // Elementwise relative error (normwise would hide a bad small value of exp/sigmoid).
      const g = got.dataSync();
      let worst = 0;
      for (let i = 0; i < g.length; i++)
        worst = Math.max(worst, Math.abs(g[i]! - want.data[i]!) / Math.max(Math.abs(want.data[i]!), 1e-6));
      expect(worst, name).toBeLessThanOrEqual(1e-5);
      expectClose(got, want);
      got.dispose();
    }
  });

  it('comparisons on float32 and int32 with broadcasting give bool', () => {
    const rng = new Rng(14);
    const CMP: [(a: tf.Tensor, b: tf.Tensor) => tf.Tensor, (x: number, y: number) => boolean][] = [
      [tf.less, (x, y) => x < y],
      [tf.lessEqual, (x, y) => x <= y],
      [tf.greater, (x, y) => x > y],
      [tf.greaterEqual, (x, y) => x >= y],
      [tf.equal, (x, y) => x === y],
      [tf.notEqual, (x, y) => x !== y],
    ];
    for (const [op, ref] of CMP)
      for (const dtype of ['float32', 'int32'] as const)
        for (const [sa, sb] of [
          [
            [8, 2000],
            [8, 1],
          ],
          [
            [2, 1],
            [1, 3],
          ],
          [[5], [5]],
        ] as [number[], number[]][]) {
          // Small integers make ties (equal values) frequent, so <= and == are really exercised.
          const a = randArr(rng, sa, 2).data.map(Math.round);
          const b = randArr(rng, sb, 2).data.map(Math.round);
          const got = tf.tidy(() => op(tf.tensor(Array.from(a), sa, dtype), tf.tensor(Array.from(b), sb, dtype)));
          expect(got.dtype).toBe('bool');
          const want = binaryRef((x, y) => (ref(x, y) ? 1 : 0), { data: a, shape: sa }, { data: b, shape: sb });
          expect(got.shape).toEqual(want.shape);
          expect(Array.from(got.dataSync())).toEqual(Array.from(want.data));
          got.dispose();
        }
  });

  it('Identity (clone) shares the buffer and counts a reference', () => {
    const x = tf.tensor([1, 2, 3]);
    const y = x.clone();
    x.dispose();
    expect(Array.from(y.dataSync())).toEqual([1, 2, 3]);
    y.dispose();
  });

  it('AddN and Select', () => {
    const rng = new Rng(13);
    const xs = [randArr(rng, [4, 9]), randArr(rng, [4, 9]), randArr(rng, [4, 9])];
    const got = tf.tidy(() => tf.addN(xs.map(toTensor)));
    const want = { data: xs[0]!.data.map((v, i) => v + xs[1]!.data[i]! + xs[2]!.data[i]!), shape: [4, 9] };
    expectClose(got, want);
    const t = randArr(rng, [4, 9]);
    const e = randArr(rng, [4, 9]);
    const cond = Array.from({ length: 36 }, () => rng.int(0, 1));
    const sel = tf.tidy(() => tf.where(tf.tensor(cond, [4, 9], 'bool'), toTensor(t), toTensor(e)));
    expect(
      relErr(
        sel.dataSync(),
        cond.map((c, i) => (c ? t.data[i]! : e.data[i]!)),
      ),
    ).toBe(0);
    tf.dispose([got, sel]);
  });
});
