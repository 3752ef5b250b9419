import { describe, it, expect } from 'vitest';
import {
  binaryRef,
  concatRef,
  gatherRef,
  matmulRef,
  reduceRef,
  relErr,
  segmentSumRef,
  sliceRef,
  softmaxRef,
  transposeRef,
} from '../../../../test/reference/kernels.ts';

const arr = (data: number[], shape: number[]) => ({ data: Float64Array.from(data), shape });

// Hand-computed cases: the references must be right before they judge the kernels.
describe('float64 references', () => {
  it('matmul with transposes and broadcasting', () => {
    // [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]]
    expect(Array.from(matmulRef(arr([1, 2, 3, 4], [2, 2]), arr([5, 6, 7, 8], [2, 2]), false, false).data)).toEqual([
      19, 22, 43, 50,
    ]);
    // a^T with a = [[1,3],[2,4]] gives the same product; b^T with b = [[5,7],[6,8]] too.
    expect(Array.from(matmulRef(arr([1, 3, 2, 4], [2, 2]), arr([5, 7, 6, 8], [2, 2]), true, true).data)).toEqual([
      19, 22, 43, 50,
    ]);
    // batch [2,1] x [1,3] of 1x1 matrices: outer product [[1*3,1*4,1*5],[2*3,2*4,2*5]]
    const r = matmulRef(arr([1, 2], [2, 1, 1, 1]), arr([3, 4, 5], [1, 3, 1, 1]), false, false);
    expect(r.shape).toEqual([2, 3, 1, 1]);
    expect(Array.from(r.data)).toEqual([3, 4, 5, 6, 8, 10]);
  });
  it('binary broadcast [2,1] + [1,3]', () => {
    const r = binaryRef((x, y) => x + y, arr([10, 20], [2, 1]), arr([1, 2, 3], [1, 3]));
    expect(r.shape).toEqual([2, 3]);
    expect(Array.from(r.data)).toEqual([11, 12, 13, 21, 22, 23]);
  });
  it('layout ops', () => {
    expect(Array.from(transposeRef(arr([1, 2, 3, 4, 5, 6], [2, 3]), [1, 0]).data)).toEqual([1, 4, 2, 5, 3, 6]);
    expect(Array.from(sliceRef(arr([1, 2, 3, 4, 5, 6], [2, 3]), [0, 1], [2, 2]).data)).toEqual([2, 3, 5, 6]);
    expect(Array.from(concatRef([arr([1, 2], [2, 1]), arr([3, 4, 5, 6], [2, 2])], 1).data)).toEqual([1, 3, 4, 2, 5, 6]);
    expect(Array.from(gatherRef(arr([1, 2, 3, 4, 5, 6], [3, 2]), [2, 0], [2], 0).data)).toEqual([5, 6, 1, 2]);
    expect(Array.from(segmentSumRef(arr([1, 2, 3, 4, 5, 6], [3, 2]), [1, 1, 0], 2).data)).toEqual([5, 6, 4, 6]);
  });
  it('reductions and softmax', () => {
    const x = arr([1, 2, 3, 4, 5, 6], [2, 3]);
    expect(Array.from(reduceRef('sum', x, [0], false).data)).toEqual([5, 7, 9]);
    expect(Array.from(reduceRef('max', x, [1], true).data)).toEqual([3, 6]);
    expect(Array.from(reduceRef('mean', x, [0, 1], false).data)).toEqual([3.5]);
    expect(Array.from(reduceRef('prod', x, [1], false).data)).toEqual([6, 120]);
    // softmax([0, ln 3]) = [1/4, 3/4]
    const s = softmaxRef(arr([0, Math.log(3)], [1, 2]));
    expect(s.data[0]).toBeCloseTo(0.25, 12);
    expect(s.data[1]).toBeCloseTo(0.75, 12);
    expect(relErr([1, 2.00002], [1, 2])).toBeCloseTo(1e-5, 9);
  });
});
