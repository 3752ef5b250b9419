import { describe, expect, it } from 'vitest';
import { formatDoctor, type DoctorReport } from './doctor.ts';
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
    expect(text).toContain('WARNING: tfjs-node-gpu is installed but libcudnn.so.8 is missing: TensorFlow will silently run on the CPU.');
  });

  it('prints no warning when every library is found', () => {
    const text = formatDoctor(base);
    expect(text).not.toContain('WARNING');
    expect(text).toContain('backend         tensorflow (@tensorflow/tfjs-node-gpu)');
    expect(text).toContain('matmul          1234.50 GFLOP/s');
  });
});
