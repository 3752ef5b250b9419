import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { loadTypedAddon } from './native/addon.ts';
import { BackendError, cpuOrder, initBackend, trainingStateBytes, WASM_HEAP_BYTES } from './select.ts';

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

  it('auto puts native ahead of wasm only when the training state exceeds the wasm heap', () => {
    expect(cpuOrder(0)).toEqual(['wasm', 'native', 'cpu']);
    expect(cpuOrder(WASM_HEAP_BYTES)).toEqual(['wasm', 'native', 'cpu']);
    expect(cpuOrder(trainingStateBytes(600e6, true))).toEqual(['native', 'wasm', 'cpu']); // Qwen3-0.6B: 9.6 GB
    expect(trainingStateBytes(600e6, false)).toBe(2.4e9);
  });

  it.skipIf(!loadTypedAddon().addon)('native on request: tfjs-backend-cpu arrays with the addon kernels', async () => {
    const choice = await initBackend('native');
    expect(choice).toMatchObject({ backend: 'native', native: { mode: 'native', loaded: true } });
    expect(tf.getBackend()).toBe('native');
    expect(choice.why).toBeUndefined();
    await tf.setBackend('wasm');
  });
});
