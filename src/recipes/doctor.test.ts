import { describe, expect, it } from 'vitest';
import { UserError } from '../errors.ts';
import { formatDoctor, run, type DoctorReport } from './doctor.ts';
import { CUDA_LIBS } from '../backend/cuda-libs.ts';

const base: DoctorReport = {
  node: 'v20.0.0',
  tfjs: '4.22.0',
  backend: { backend: 'tensorflow', pkg: '@tensorflow/tfjs-node-gpu', skipped: [] },
  gpuPackage: '4.22.0',
  driver: '/usr/lib/x86_64-linux-gnu/libcuda.so.1',
  cudaLibs: CUDA_LIBS.map((lib) => ({ lib, path: `/usr/local/cuda/lib64/${lib}` })),
  matmul: { gflops: 1234.5, warmupMs: 900, medianMs: 1.7 },
};

describe('formatDoctor', () => {
  it('says loudly when tfjs-node-gpu is installed but cuDNN is missing', () => {
    const r = { ...base, cudaLibs: base.cudaLibs.map((l) => (l.lib === 'libcudnn.so.8' ? { ...l, path: null } : l)) };
    const text = formatDoctor(r);
    expect(text).toContain('libcudnn.so.8        MISSING');
    expect(text).toContain(
      'WARNING: tfjs-node-gpu is installed but libcudnn.so.8 is missing: TensorFlow will silently run on the CPU.',
    );
  });

  it('prints no warning when every library is found', () => {
    const text = formatDoctor(base);
    expect(text).not.toContain('WARNING');
    expect(text).toContain('backend         tensorflow (@tensorflow/tfjs-node-gpu)');
    expect(text).toContain('matmul          1234.50 GFLOP/s');
  });

  it('names the native binary that runs and why another was passed over', () => {
    const native = {
      loaded: true,
      mode: 'native' as const,
      reason: '',
      kernels: ['BatchMatMul', 'Add'],
      blasThreads: 2,
      blasPolicy: 'auto' as const,
      blasConfig: 'OpenBLAS 0.3.21 DYNAMIC_ARCH',
      source: 'local build' as const,
    };
    const r: DoctorReport = {
      ...base,
      backend: {
        backend: 'wasm',
        pkg: '@tensorflow/tfjs-backend-wasm',
        skipped: [],
        wasm: { simd: true, threads: 1, threadsRequested: 2 },
        native,
      },
      nativeBinary: {
        path: 'native/build/Release/sharp_native.node',
        skipped: ['prebuilt x.node has sha256 0123, x.node.sha256 records 4567: not the committed build; skipped'],
      },
    };
    const text = formatDoctor(r);
    expect(text).toContain(
      'native kernels  loaded (local build, native/build/Release/sharp_native.node): 2 wasm kernels overridden\n  ' +
        'passed over   prebuilt x.node has sha256 0123, x.node.sha256 records 4567: not the committed build; ' +
        'skipped\n  kernels       BatchMatMul, Add',
    );
    expect(text).toContain(
      "  memory        one wasm heap of at most 4 GiB for all tensors; auto picks native instead when a model's " +
        'training state exceeds it (--backend native to force it)',
    );
    expect(formatDoctor({ ...r, nativeBackend: 'not built' })).toContain('(native unavailable here: not built)');
    const nat = formatDoctor({
      ...r,
      backend: { backend: 'native', pkg: 'p', skipped: [], native, why: 'the state exceeds the heap' },
    });
    expect(nat).toContain(
      '  memory        tensors in ordinary memory (no 4 GiB wasm heap): chosen because the state exceeds the heap',
    );
    expect(nat).toContain(
      'native kernels  loaded (local build, native/build/Release/sharp_native.node): 2 tfjs-backend-cpu JS kernels ' +
        'replaced',
    );
    const fallback = formatDoctor({
      ...r,
      backend: {
        ...r.backend,
        native: { loaded: false, mode: 'fallback', reason: 'not built', kernels: ['BatchMatMul'], blasThreads: 0 },
      },
    });
    expect(fallback).toContain('native kernels  fallback (not built)');
    expect(fallback).not.toContain('passed over');
  });
});

describe('sharp doctor flags', () => {
  it('refuses a negative or absurd --threads in one line before touching a backend', async () => {
    await expect(run({ threads: -3 })).rejects.toThrow(
      new UserError('doctor --threads: -3 is not an integer in 0..1024 (0 = all cores)'),
    );
    await expect(run({ threads: 1e9 })).rejects.toBeInstanceOf(UserError);
  });
});
