import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src/backend/select.ts';
import { benchPrefix, CONTEXT, REPLAYS, TAIL } from './prefix.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('bench prefix section (quick)', () => {
  it('counts prefill tokens with and without reuse and leaks no tensors', async () => {
    const rows = await benchPrefix(true);
    const by = new Map(rows.map((r) => [r.metric, r.value]));
    const label = `${REPLAYS} replays of a ${CONTEXT}+${TAIL}-token context`;
    expect(rows.every((r) => r.section === 'prefix' && Number.isFinite(r.value))).toBe(true);
    // Off: 8 x 320 = 2560 tokens. On: the 300-token context once + 8 tails of 20 = 460.
    expect(by.get(`prefill tokens, ${label}, reuse off`)).toBe(2560);
    expect(by.get(`prefill tokens, ${label}, reuse on`)).toBe(460);
    expect(by.get('prefix reuse tensor leak')).toBe(0);
  }, 60_000);
});
