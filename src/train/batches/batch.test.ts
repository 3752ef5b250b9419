import { describe, it, expect, beforeAll } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { disposeBatch, microBatchOrder, padBatch, trainedTokens } from './batch.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('padBatch', () => {
  it('right-pads and shifts the train mask and sampling logprobs by one (tokenLogprobs convention)', () => {
    const b = padBatch(
      [
        { ids: [5, 6, 7, 8], trainMask: [0, 0, 1, 1], sampleLogp: [0, 0, -0.5, -0.25] },
        { ids: [9, 10], trainMask: [0, 1], sampleLogp: [0, -2] },
      ],
      3,
      true,
    );
    expect(b.ids.arraySync()).toEqual([
      [5, 6, 7, 8],
      [9, 10, 3, 3],
    ]);
    expect(b.attn.arraySync()).toEqual([
      [1, 1, 1, 1],
      [1, 1, 0, 0],
    ]);
    // position t scores ids[t + 1]
    expect(b.mask.arraySync()).toEqual([
      [0, 1, 1],
      [1, 0, 0],
    ]);
    expect(b.sampleLogp?.arraySync()).toEqual([
      [0, -0.5, -0.25],
      [-2, 0, 0],
    ]);
    disposeBatch(b);
  });

  it('carries an SFT loss weight into the mask', () => {
    const b = padBatch([{ ids: [5, 6, 7], trainMask: [0, 1, 2.5] }], 0);
    expect(b.mask.arraySync()).toEqual([[1, 2.5]]);
    disposeBatch(b);
  });

  it('rejects an empty micro-batch', () => expect(() => padBatch([], 0)).toThrow('padBatch: empty micro-batch'));
});

describe('microBatchOrder', () => {
  it('groups longest first, ties by index', () =>
    expect(microBatchOrder([3, 9, 3, 5, 9], 2)).toEqual([[1, 4], [3, 0], [2]]));
  it('counts trained tokens', () => expect(trainedTokens({ ids: [1, 2, 3], trainMask: [0, 1, 1] })).toBe(2));
});
