import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { initBackend } from '../select.ts';
import { addonBuilt } from '../../../test/native-testkit.ts';
import {
  disableNativeKernels,
  enableNativeKernels,
  nativeStatus,
  setBlasThreads,
  useBlasThreadsFor,
  NATIVE_KERNELS,
} from './register.ts';

describe('enableNativeKernels', () => {
  beforeAll(async () => {
    await initBackend('wasm');
    disableNativeKernels();
  });
  afterAll(() => disableNativeKernels());

  it('installs native kernels when built, else the fallback, and restores the stock ones', () => {
    const stock = tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc;
    const s = enableNativeKernels();
    expect(enableNativeKernels()).toBe(s); // idempotent
    expect(nativeStatus()).toEqual(s);
    if (addonBuilt) {
      expect(s).toMatchObject({ loaded: true, mode: 'native', reason: '' });
      expect(s.kernels).toEqual(NATIVE_KERNELS.map((k) => k.name));
      expect(s.blasThreads).toBeGreaterThanOrEqual(1);
      expect(s.blasPolicy).toBe('auto');
      expect(s.blasConfig).toMatch(/OpenBLAS/);
      for (const name of s.kernels) expect(tf.getKernel(name, 'wasm'), name).toBeDefined();
    } else {
      expect(s).toMatchObject({ loaded: false, mode: 'fallback', kernels: ['BatchMatMul'] });
      expect(s.reason.length).toBeGreaterThan(0);
    }
    expect(tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc).not.toBe(stock);
    disableNativeKernels();
    expect(tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc).toBe(stock);
    expect(tf.getKernel('UnsortedSegmentSum', 'wasm')).toBeUndefined();
    expect(nativeStatus().mode).toBe('off');
  });

  it.skipIf(!addonBuilt)('switches BLAS threads at run time', () => {
    enableNativeKernels();
    expect(useBlasThreadsFor('decode')).toBe(1);
    expect(nativeStatus().blasThreads).toBe(1);
    expect(setBlasThreads(2)).toBe(2);
    expect(() => setBlasThreads(0)).toThrow(/positive integer/);
    expect(useBlasThreadsFor('auto')).toBeGreaterThanOrEqual(1);
    expect(nativeStatus().blasPolicy).toBe('auto');
    disableNativeKernels();
  });

  it('SHARP_NATIVE=0 disables the addon', async () => {
    vi.stubEnv('SHARP_NATIVE', '0');
    vi.resetModules();
    const { loadAddon } = await import('./addon.ts');
    const r = loadAddon();
    expect(r.addon).toBeUndefined();
    expect(r.reason).toBe('disabled by SHARP_NATIVE=0');
    vi.unstubAllEnvs();
  });
});
