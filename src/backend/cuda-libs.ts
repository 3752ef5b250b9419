import { existsSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Finds the CUDA / cuDNN shared libraries that libtensorflow 2.9.1 (tfjs-node-gpu 4.22) loads.
 * tfjs silently falls back to the CPU when libcudnn.so.8 is missing, so `sharp doctor` reports
 * each one it looked for and where.
 */
export const CUDA_LIBS = [
  'libcudart.so.11.0',
  'libcublas.so.11',
  'libcublasLt.so.11',
  'libcufft.so.10',
  'libcurand.so.10',
  'libcusolver.so.11',
  'libcusparse.so.11',
  'libcudnn.so.8',
] as const;

export interface LibProbe {
  lib: string;
  /** Full path where found, or null. */
  path: string | null;
}

/** Library folders to search: LD_LIBRARY_PATH, the usual CUDA folders, and the ldconfig cache. */
function libraryDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const dirs = (env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  dirs.push(
    '/usr/local/cuda/lib64',
    '/usr/local/cuda-11.8/lib64',
    '/usr/lib/x86_64-linux-gnu',
    '/usr/lib64',
    '/usr/local/nvidia/lib64',
  );
  return [...new Set(dirs)];
}

function ldconfigCache(): Map<string, string> {
  const out = new Map<string, string>();
  try {
    const text = execFileSync('ldconfig', ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    for (const line of text.split('\n')) {
      const m = /^\s*(\S+) .*=> (\S+)$/.exec(line);
      if (m?.[1] && m[2]) out.set(m[1], m[2]);
    }
  } catch {
    // No ldconfig (e.g. a minimal image): the folder scan below still runs.
  }
  return out;
}

export function probeCudaLibs(dirs: string[] = libraryDirs()): LibProbe[] {
  const cache = ldconfigCache();
  return CUDA_LIBS.map((lib) => {
    const dir = dirs.find((d) => existsSync(join(d, lib)));
    return { lib, path: dir ? join(dir, lib) : (cache.get(lib) ?? null) };
  });
}

/** NVIDIA driver library presence (the container toolkit mounts libcuda.so.1 from the host). */
export function findDriver(dirs: string[] = libraryDirs()): string | null {
  for (const d of dirs) {
    try {
      const hit = readdirSync(d).find((f) => f.startsWith('libcuda.so'));
      if (hit) return join(d, hit);
    } catch {
      // Folder absent.
    }
  }
  return ldconfigCache().get('libcuda.so.1') ?? null;
}
