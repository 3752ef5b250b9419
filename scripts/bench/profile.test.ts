import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src/backend/select.ts';
import { benchOps } from './ops.ts';
import { benchProfile } from './profile.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('bench profile and ops sections (quick)', () => {
  it('profiles one train step with the custom-gradient ops under their own names', async () => {
    const rows = await benchProfile(true);
    const metrics = rows.map((r) => r.metric);
    expect(rows.every((r) => r.section === 'profile' && Number.isFinite(r.value) && r.value >= 0)).toBe(true);
    expect(metrics.some((m) => m.startsWith('scope embed ('))).toBe(true);
    // The log-prob is a custom-gradient scope, or one fused kernel where the native kernels have it.
    expect(
      metrics.some((m) => m.startsWith('scope selectedLogprobs (') || m.startsWith('kernel SharpSelectedLogprobs (')),
    ).toBe(true);
    expect(metrics.some((m) => m.startsWith('kernel BatchMatMul ('))).toBe(true);
    expect(metrics.some((m) => m.includes('unnamed scope'))).toBe(false);
  });

  it('times every op forward and backward', async () => {
    const rows = await benchOps(true);
    expect(rows.every((r) => r.section === 'ops' && Number.isFinite(r.value) && r.value >= 0)).toBe(true);
    for (const op of ['linear', 'matmulBT', 'bmm', 'embed', 'selectedLogprobs', 'decoder block']) {
      expect(rows.some((r) => r.metric.startsWith(op) && r.metric.includes('forward'))).toBe(true);
      expect(rows.some((r) => r.metric.startsWith(op) && r.metric.includes('backward'))).toBe(true);
    }
  });
});
