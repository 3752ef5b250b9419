import { describe, expect, it } from 'vitest';
import { gpuFallbackWarning, resolveBackendName } from './gpu-check.ts';
import type { BackendChoice } from './select.ts';

const gpu: BackendChoice = { backend: 'tensorflow', pkg: '@tensorflow/tfjs-node-gpu', skipped: [] };
const cpuBuild: BackendChoice = { backend: 'tensorflow', pkg: '@tensorflow/tfjs-node', skipped: [] };
const allLibs = [{ lib: 'libcudnn.so.8', path: '/x/libcudnn.so.8' }];

describe('resolveBackendName', () => {
  it('prefers the flag, then SHARP_BACKEND, then the config', () => {
    expect(resolveBackendName('cpu', 'auto', { SHARP_BACKEND: 'wasm' })).toBe('cpu');
    expect(resolveBackendName(undefined, 'auto', { SHARP_BACKEND: 'tensorflow' })).toBe('tensorflow');
    expect(resolveBackendName(undefined, 'wasm', {})).toBe('wasm');
    expect(() => resolveBackendName(undefined, 'auto', { SHARP_BACKEND: 'gpu' })).toThrow(/got 'gpu'/);
  });
});

describe('gpuFallbackWarning', () => {
  it('is silent unless tensorflow was requested, and when the GPU build has its libraries', () => {
    expect(gpuFallbackWarning('auto', cpuBuild, [])).toBeNull();
    expect(gpuFallbackWarning('tensorflow', gpu, allLibs)).toBeNull();
  });

  it('warns when the CPU build loaded or cuDNN is missing', () => {
    expect(gpuFallbackWarning('tensorflow', cpuBuild, allLibs)).toContain(
      '@tensorflow/tfjs-node loaded: training runs on the CPU',
    );
    expect(gpuFallbackWarning('tensorflow', gpu, [{ lib: 'libcudnn.so.8', path: null }])).toBe(
      'tfjs-node-gpu loaded but libcudnn.so.8 not found: TensorFlow falls back to the CPU',
    );
  });
});
