import { describe, expect, it } from 'vitest';
import { tookLine } from './train.ts';

describe('tookLine', () => {
  it('says how long the run took and on what, and how to get the native kernels when they are off', () => {
    expect(tookLine(461.4, { backend: 'wasm', native: 'native' })).toBe(
      'took 7 min 41 s (wasm backend, native OpenBLAS kernels)',
    );
    expect(tookLine(461.4, { backend: 'wasm', native: 'native', nativeSource: 'prebuilt' })).toBe(
      'took 7 min 41 s (wasm backend, native OpenBLAS kernels: prebuilt)',
    );
    expect(tookLine(61, { backend: 'wasm', native: 'native', nativeSource: 'local build' })).toBe(
      'took 1 min 1 s (wasm backend, native OpenBLAS kernels: local build)',
    );
    expect(tookLine(42, { backend: 'tensorflow', native: 'off' })).toBe('took 42 s (tensorflow backend)');
    expect(tookLine(1000, { backend: 'wasm', native: 'fallback (addon not built)' })).toBe(
      'took 16 min 40 s (wasm backend without the native OpenBLAS kernels: fallback (addon not built); with them ' +
        'training runs 3-4x faster: apt-get install libopenblas-dev, then npm run build:native)',
    );
  });
});
