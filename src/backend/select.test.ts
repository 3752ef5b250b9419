import { describe, expect, it } from 'vitest';
import { BackendError, initBackend } from './select.ts';

describe('initBackend', () => {
  it('explicit tensorflow fails with one line when tfjs-node is not installed', async () => {
    const err = await initBackend('tensorflow').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    const msg = (err as Error).message;
    expect(msg).toMatch(/^backend 'tensorflow' is unavailable: /);
    expect(msg).toContain('@tensorflow/tfjs-node-gpu');
    expect(msg.split('\n')).toHaveLength(1);
  });

  it('auto picks wasm here with SIMD on, and records why tensorflow was skipped', async () => {
    const choice = await initBackend('auto');
    expect(choice.backend).toBe('wasm');
    expect(choice.wasm?.simd).toBe(true);
    expect(choice.skipped.map((s) => s.candidate)).toEqual(['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']);
  });
});
