import { createRequire } from 'node:module';
import * as tf from '@tensorflow/tfjs';
import { initBackend, type BackendChoice, type BackendName } from '../backend/select.ts';
import { findDriver, probeCudaLibs, type LibProbe } from '../backend/cuda-libs.ts';
import { matmulGflops } from '../backend/matmul-bench.ts';
import { resolveBackendName } from '../backend/gpu-check.ts';
import { loadAddon, loadTypedAddon, repoRoot } from '../backend/native/addon.ts';
import { relative } from 'node:path';
import { MAX_THREADS } from '../config/sections/bounds.ts';
import type { DoctorFlags } from './commands.ts';
import { UserError } from '../errors.ts';

/**
 * `sharp doctor [--backend B]`: what this machine gives sharp-rl. Node and tfjs versions, the
 * chosen backend and why better ones were skipped, wasm SIMD/threads, whether tfjs-node-gpu is
 * installed, which CUDA/cuDNN libraries were found (loudly when missing: tfjs falls back to the CPU
 * silently), and a measured matmul rate.
 */
export interface DoctorReport {
  node: string;
  tfjs: string;
  backend: BackendChoice;
  gpuPackage: string | null;
  driver: string | null;
  cudaLibs: LibProbe[];
  matmul: { gflops: number; warmupMs: number; medianMs: number };
  /** With the wasm backend: the native binary tried last (relative to the repo) and why others were passed over. */
  nativeBinary?: { path: string; skipped: string[] };
  /** With the wasm backend: why the native backend could not run here ('' when it could). */
  nativeBackend?: string;
}

const require = createRequire(import.meta.url);

function installedVersion(pkg: string): string | null {
  try {
    return (require(`${pkg}/package.json`) as { version: string }).version;
  } catch {
    return null;
  }
}

export async function collectDoctor(backend: BackendName = 'auto', threads = 0): Promise<DoctorReport> {
  const choice = await initBackend(backend, threads);
  return {
    node: process.version,
    tfjs: tf.version.tfjs,
    backend: choice,
    gpuPackage: installedVersion('@tensorflow/tfjs-node-gpu'),
    driver: findDriver(),
    cudaLibs: probeCudaLibs(),
    matmul: await matmulGflops(choice.backend === 'tensorflow' ? 1024 : 256),
    ...(choice.native ? { nativeBinary: nativeBinary(choice.backend) } : {}),
    ...(choice.backend === 'wasm' ? { nativeBackend: loadTypedAddon().reason } : {}),
  };
}

function nativeBinary(backend: BackendChoice['backend']): { path: string; skipped: string[] } {
  const load = backend === 'native' ? loadTypedAddon() : loadAddon();
  return { path: relative(repoRoot, load.path), skipped: load.skipped };
}

/** Why this backend and not the other CPU one (wasm or native), in one line. */
function memoryLine(r: DoctorReport): string | undefined {
  const b = r.backend;
  if (b.backend === 'native')
    return `tensors in ordinary memory (no 4 GiB wasm heap)${b.why ? `: chosen because ${b.why}` : ''}`;
  if (b.backend !== 'wasm') return undefined;
  const why = r.nativeBackend ?? '';
  return (
    `one wasm heap of at most 4 GiB for all tensors; auto picks native instead when a model's training state ` +
    `exceeds it${why ? ` (native unavailable here: ${why})` : ' (--backend native to force it)'}`
  );
}

export function formatDoctor(r: DoctorReport): string {
  const lines = [
    `node            ${r.node}`,
    `tfjs            ${r.tfjs}`,
    `backend         ${r.backend.backend} (${r.backend.pkg})`,
  ];
  for (const s of r.backend.skipped) lines.push(`  skipped       ${s.candidate}: ${s.reason}`);
  const memory = memoryLine(r);
  if (memory) lines.push(`  memory        ${memory}`);
  if (r.backend.wasm) {
    lines.push(`wasm SIMD       ${r.backend.wasm.simd ? 'on' : 'off'}`);
    lines.push(
      `wasm threads    ${r.backend.wasm.threads} (requested ${r.backend.wasm.threadsRequested}; tfjs runs wasm ` +
        `single-threaded in Node)`,
    );
  }
  const n = r.backend.native;
  if (n) {
    const from = n.source ? ` (${n.source}${r.nativeBinary ? `, ${r.nativeBinary.path}` : ''})` : '';
    const over = r.backend.backend === 'native' ? 'tfjs-backend-cpu JS kernels replaced' : 'wasm kernels overridden';
    lines.push(
      `native kernels  ` +
        `${n.mode === 'native' ? `loaded${from}: ${n.kernels.length} ${over}` : `${n.mode} (${n.reason})`}`,
    );
    if (n.mode === 'native') {
      for (const why of r.nativeBinary?.skipped ?? []) lines.push(`  passed over   ${why}`);
      lines.push(`  kernels       ${n.kernels.join(', ')}`);
      lines.push(
        `  threads       ${n.blasThreads} (${
          n.blasPolicy === 'auto'
            ? "auto: every kernel, GEMMs included, splits its work across the addon's pool; small decode-step " +
              'products on one thread'
            : 'fixed: OpenBLAS threads each GEMM'
        })${n.blasConfig ? `; ${n.blasConfig}` : ''}`,
      );
    } else if (n.mode === 'fallback') {
      lines.push(
        `  kernels       ${n.kernels.join(', ')} (pure-wasm split of batched/transposed matmuls; build the addon ` +
          `with npm run build:native)`,
      );
    }
  }
  lines.push(
    `tfjs-node-gpu   ${
      r.gpuPackage
        ? `installed ${r.gpuPackage}`
        : 'not installed (GPU hosts: use the Docker image, see docs/operations.md)'
    }`,
  );
  lines.push(`NVIDIA driver   ${r.driver ?? 'not found (libcuda.so)'}`);
  const missing = r.cudaLibs.filter((l) => !l.path);
  for (const l of r.cudaLibs) lines.push(`  ${l.lib.padEnd(20)} ${l.path ?? 'MISSING'}`);
  if (r.gpuPackage && missing.length > 0) {
    lines.push(
      `WARNING: tfjs-node-gpu is installed but ${missing.map((l) => l.lib).join(', ')} ` +
        `${missing.length === 1 ? 'is' : 'are'} missing: TensorFlow will silently run on the CPU.`,
    );
  }
  if (r.backend.backend === 'tensorflow' && r.gpuPackage === null)
    lines.push('note            tensorflow backend is the CPU build (tfjs-node), not the GPU one');
  lines.push(
    `matmul          ${r.matmul.gflops.toFixed(2)} GFLOP/s (median ${r.matmul.medianMs.toFixed(2)} ms, warm-up ` +
      `${r.matmul.warmupMs.toFixed(1)} ms)`,
  );
  return lines.join('\n');
}

export async function run(opts: DoctorFlags): Promise<void> {
  if (!Number.isInteger(opts.threads) || opts.threads < 0 || opts.threads > MAX_THREADS)
    throw new UserError(`doctor --threads: ${opts.threads} is not an integer in 0..${MAX_THREADS} (0 = all cores)`);
  const report = await collectDoctor(resolveBackendName(opts.backend, 'auto'), opts.threads);
  process.stdout.write(formatDoctor(report) + '\n');
}
