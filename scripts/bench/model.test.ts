import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src/backend/select.ts';
import { benchModel } from './model.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('bench model section (quick)', () => {
  it('measures every metric, with no tensor leak in training or decoding', async () => {
    const rows = await benchModel(true);
    const by = new Map(rows.map((r) => [r.metric, r]));
    expect(rows.every((r) => r.section === 'model' && Number.isFinite(r.value))).toBe(true);
    expect(by.get('train step (fwd+bwd+Adam), median')?.value).toBeGreaterThan(0);
    expect(by.get('train tensor leak over steps')?.value).toBe(0);
    expect(by.get('decode tensor leak')?.value).toBe(0);
    expect(by.get('prefill 8x64')?.value).toBeGreaterThan(0);
    // tokens/s is consistent with the step time: 8 x 64 tokens per step.
    const step = by.get('train step (fwd+bwd+Adam), median')?.value as number;
    expect(by.get('train tokens/s')?.value).toBeCloseTo((8 * 64 * 1000) / step, 6);
  });
});
