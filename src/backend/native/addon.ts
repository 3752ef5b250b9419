import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Loader of the native addon (native/, built by scripts/build-native.mjs). Loading never
 * throws: a missing build, a load error or SHARP_NATIVE=0 yields `{ addon: undefined, reason }` and
 * the caller falls back to the pure-wasm overrides.
 */
export interface NativeAddon {
  setArgs(args: Float64Array): void;
  /** Hands over the wasm memory buffer; returns its byte length. */
  setHeap(buffer: ArrayBuffer): number;
  /** Fixed BLAS thread count; returns the count in effect. */
  setThreads(n: number): number;
  /** Automatic: 1 thread for GEMMs of <= 32 rows (decode), up to `max` otherwise; returns max. */
  setAutoThreads(max: number): number;
  getThreads(): number;
  blasConfig(): string;
  lastError(): string;
  readonly argsLength: number;
  // Kernels: read their arguments from the shared block, return 0 or a negative error code.
  matmul(): number;
  binary(): number;
  unary(): number;
  transpose(): number;
  slice(): number;
  concat(): number;
  gather(): number;
  segmentSum(): number;
  oneHot(): number;
  addN(): number;
  reduce(): number;
  softmax(): number;
  adamw(): number;
  select(): number;
  cast(): number;
}

export interface AddonLoad {
  addon: NativeAddon | undefined;
  /** Why it is absent (one line); empty when loaded. */
  reason: string;
  /** The .node file tried. */
  path: string;
}

const here = dirname(fileURLToPath(import.meta.url));
/** Repo root: src/backend/native -> ../../.. */
export const repoRoot = resolve(here, '..', '..', '..');
export const addonPath = join(repoRoot, 'native', 'build', 'Release', 'sharp_native.node');

let cached: AddonLoad | undefined;

/** Loads the addon once per process (SHARP_NATIVE=0 disables it). */
export function loadAddon(): AddonLoad {
  if (cached) return cached;
  if (process.env['SHARP_NATIVE'] === '0') {
    cached = { addon: undefined, reason: 'disabled by SHARP_NATIVE=0', path: addonPath };
  } else if (!existsSync(addonPath)) {
    cached = { addon: undefined, reason: `not built (${addonPath} missing; run npm run build:native)`, path: addonPath };
  } else {
    try {
      const require = createRequire(import.meta.url);
      const addon = require(addonPath) as NativeAddon;
      cached = { addon, reason: '', path: addonPath };
    } catch (err) {
      const msg = String(err instanceof Error ? err.message : err).split('\n')[0] ?? '';
      cached = { addon: undefined, reason: `failed to load: ${msg}`, path: addonPath };
    }
  }
  return cached;
}
