import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Loader of the native addon (native/): the prebuilt binary for this platform (prebuilds/), else the
 * local build of scripts/build-native.mjs. Loading never throws: no usable binary, a load error or
 * SHARP_NATIVE=0 yields `{ addon: undefined, reason }` and the caller falls back to the pure-wasm
 * overrides.
 */
export interface NativeAddon {
  setArgs(args: Float64Array): void;
  /** Hands over the wasm memory buffer; returns its byte length. */
  setHeap(buffer: ArrayBuffer): number;
  /** Fixed BLAS thread count; returns the count in effect. */
  setThreads(n: number): number;
  /**
   * Automatic: every kernel splits its work across up to `max` pool threads (small decode-step products stay on one);
   * returns max.
   */
  setAutoThreads(max: number): number;
  getThreads(): number;
  blasConfig(): string;
  lastError(): string;
  readonly argsLength: number;
  /**
   * Kernels on the wasm heap: read their arguments from the shared block (tensors as heap byte
   * offsets), return 0 or a negative error code.
   */
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
  /** The fused decoder kernels (native/src/fused.cc); absent from binaries built before them. */
  rmsNorm?(): number;
  rmsNormGrad?(): number;
  swiglu?(): number;
  swigluGrad?(): number;
  rope?(): number;
  selectedLogprobs?(): number;
  selectedLogprobsGrad?(): number;
  /** The attention kernels (native/src/attention.cc). */
  attnProbs?(): number;
  attnProbsGrad?(): number;
  attnApply?(): number;
  attnApplyGrad?(): number;
  /** In-place writes into a preallocated KV cache, and Cumsum on the heap (absent from older binaries). */
  kvWrite?(): number;
  cumsum?(): number;
  /** Products with bfloat16 weights, and their decoding (native/src/bf16.cc). */
  bf16MatMul?(): number;
  bf16Unpack?(): number;
  /**
   * The same kernels on the TypedArrays passed in the call (a tensor's slot holds its argument
   * index). Absent from binaries built before this binding existed.
   */
  readonly typed?: Record<TypedKernelFn, (...arrays: ArrayBufferView[]) => number> &
    Partial<Record<FusedKernelFn | InPlaceKernelFn, (...arrays: ArrayBufferView[]) => number>>;
}

/** The heap binding's kernels, one per native/src kernel. */
type HeapKernelFn =
  | 'matmul'
  | 'binary'
  | 'unary'
  | 'transpose'
  | 'slice'
  | 'concat'
  | 'gather'
  | 'segmentSum'
  | 'oneHot'
  | 'addN'
  | 'reduce'
  | 'softmax'
  | 'adamw'
  | 'select'
  | 'cast';
/** The typed-array binding's: the same, and Cumsum (the heap binding has it only in newer binaries). */
const TYPED_KERNEL_FNS = [
  'matmul',
  'binary',
  'unary',
  'transpose',
  'slice',
  'concat',
  'gather',
  'segmentSum',
  'oneHot',
  'addN',
  'reduce',
  'softmax',
  'adamw',
  'select',
  'cast',
  'cumsum',
] as const;
type TypedKernelFn = (typeof TYPED_KERNEL_FNS)[number];
/** Kernels of both bindings that older binaries lack: their overrides register only where present. */
export type FusedKernelFn =
  | 'rmsNorm'
  | 'rmsNormGrad'
  | 'swiglu'
  | 'swigluGrad'
  | 'rope'
  | 'selectedLogprobs'
  | 'selectedLogprobsGrad'
  | 'attnProbs'
  | 'attnProbsGrad'
  | 'attnApply'
  | 'attnApplyGrad'
  | 'bf16MatMul'
  | 'bf16Unpack';
/** Kernels with no tfjs kernel of their own that older binaries lack: the in-place KV cache write. */
type InPlaceKernelFn = 'kvWrite';
export type NativeKernelFn = HeapKernelFn | TypedKernelFn | FusedKernelFn | InPlaceKernelFn;

/** Whether `addon` has the typed-array binding with every kernel (binaries built before it lack it). */
function hasTypedBinding(addon: NativeAddon): boolean {
  const typed = addon.typed;
  return typed !== undefined && TYPED_KERNEL_FNS.every((k) => typeof typed[k] === 'function');
}

/** Where a loaded addon came from: the committed prebuilt binary, or `npm run build:native`. */
export type AddonSource = 'prebuilt' | 'local build';

export interface AddonLoad {
  addon: NativeAddon | undefined;
  /** Why it is absent (one line); empty when loaded. */
  reason: string;
  /** The .node file loaded (or the last one tried). */
  path: string;
  /** Which candidate loaded; undefined when none did. */
  source?: AddonSource;
  /** Why earlier candidates were passed over (e.g. the prebuilt's checksum did not match). */
  skipped: string[];
}

const here = dirname(fileURLToPath(import.meta.url));
/** Repo root: src/backend/native -> ../../.. */
export const repoRoot = resolve(here, '..', '..', '..');
/** The local build of `npm run build:native` (node-gyp, against the installed OpenBLAS). */
export const addonPath = join(repoRoot, 'native', 'build', 'Release', 'sharp_native.node');
/**
 * The prebuilt binaries for this platform, node-gyp-build's layout (prebuilds/<platform>-<arch>/,
 * tags napi and glibc in the name): N-API, so one file serves every supported Node version; OpenBLAS
 * linked in statically (scripts/build-prebuild.mjs, prebuilds/README.md). Two builds of the same
 * sources: for AVX2+FMA, and for the x86-64 baseline (every other x86-64 CPU).
 */
const prebuiltDir = join(repoRoot, 'prebuilds', `${process.platform}-${process.arch}`);
export const prebuiltPath = join(prebuiltDir, 'sharp_native.napi.glibc.node');
export const prebuiltAvx2Path = join(prebuiltDir, 'sharp_native.avx2.napi.glibc.node');

/**
 * Whether the AVX2+FMA build may run here: /proc/cpuinfo lists both flags (false where it cannot be
 * read) and SHARP_NATIVE_AVX2 is not 0 (which keeps the baseline build, to test it on any machine).
 */
export function avx2Here(
  env: string | undefined = process.env['SHARP_NATIVE_AVX2'],
  cpuinfo = '/proc/cpuinfo',
): boolean {
  if (env === '0') return false;
  try {
    const flags = (/^flags\s*:(.*)$/m.exec(readFileSync(cpuinfo, 'utf8'))?.[1] ?? '').trim().split(/\s+/);
    return flags.includes('avx2') && flags.includes('fma');
  } catch {
    return false;
  }
}

/** The prebuilt binaries to try, best first: the AVX2+FMA build where it may run, then the baseline one. */
export function prebuiltCandidates(avx2 = avx2Here()): string[] {
  return avx2 ? [prebuiltAvx2Path, prebuiltPath] : [prebuiltPath];
}

/** Which candidates `SHARP_NATIVE` allows: unset = prebuilt then local build; 0 = none. */
export type AddonChoice = 'auto' | 'prebuilt' | 'local' | 'off';

export function addonChoice(env: string | undefined): AddonChoice {
  if (env === '0') return 'off';
  if (env === 'prebuilt' || env === 'local') return env;
  return 'auto';
}

/**
 * Checks a prebuilt binary against the sha256 recorded beside it (`<file>.sha256`, sha256sum's
 * format). Returns '' when it matches, else why it is not used (one line).
 */
export function verifyPrebuilt(file: string): string {
  if (!existsSync(file)) return `no prebuilt kernels for ${process.platform}-${process.arch} (${file} missing)`;
  const sumFile = `${file}.sha256`;
  if (!existsSync(sumFile)) return `prebuilt ${file} has no recorded sha256 (${sumFile} missing); skipped`;
  const want = readFileSync(sumFile, 'utf8').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  const got = createHash('sha256').update(readFileSync(file)).digest('hex');
  if (got !== want)
    return (
      `prebuilt ${file} has sha256 ${got.slice(0, 16)}..., ${sumFile} records ` +
      `${want.slice(0, 16) || 'nothing'}...: not the committed build; skipped`
    );
  return '';
}

function requireAddon(file: string): { addon?: NativeAddon; error?: string } {
  try {
    const addon = createRequire(import.meta.url)(file) as NativeAddon;
    if (typeof addon.blasConfig !== 'function' || typeof addon.matmul !== 'function')
      return { error: 'not the sharp-rl kernels (blasConfig/matmul missing)' };
    return { addon };
  } catch (err) {
    return { error: String(err instanceof Error ? err.message : err).split('\n')[0] ?? '' };
  }
}

/**
 * Tries the candidates in order: the prebuilt binaries (sha256 checked; the AVX2+FMA one first where
 * the CPU has both), then the local build, and says why each one passed over was. Never throws.
 */
export function loadAddonFrom(
  choice: AddonChoice,
  files: { prebuilt: string | readonly string[]; local: string } = { prebuilt: prebuiltCandidates(), local: addonPath },
): AddonLoad {
  if (choice === 'off')
    return { addon: undefined, reason: 'disabled by SHARP_NATIVE=0', path: files.local, skipped: [] };
  const skipped: string[] = [];
  if (choice !== 'local') {
    const prebuilt = typeof files.prebuilt === 'string' ? [files.prebuilt] : files.prebuilt;
    for (const file of prebuilt) {
      const bad = verifyPrebuilt(file);
      if (!bad) {
        const r = requireAddon(file);
        if (r.addon) return { addon: r.addon, reason: '', path: file, source: 'prebuilt', skipped };
        skipped.push(`prebuilt ${file} failed to load: ${r.error}`);
      } else {
        skipped.push(bad);
      }
    }
    if (choice === 'prebuilt')
      return {
        addon: undefined,
        reason: `${skipped.join('; ')} (SHARP_NATIVE=prebuilt)`,
        path: prebuilt[prebuilt.length - 1] ?? '',
        skipped,
      };
  }
  if (!existsSync(files.local)) {
    const why = `not built (${files.local} missing; run npm run build:native)`;
    return { addon: undefined, reason: [...skipped, why].join('; '), path: files.local, skipped };
  }
  const r = requireAddon(files.local);
  if (r.addon) return { addon: r.addon, reason: '', path: files.local, source: 'local build', skipped };
  return {
    addon: undefined,
    reason: [...skipped, `failed to load: ${r.error}`].join('; '),
    path: files.local,
    skipped,
  };
}

let cached: AddonLoad | undefined;
let cachedTyped: AddonLoad | undefined;

/**
 * Loads the addon once per process. SHARP_NATIVE=0 disables it; SHARP_NATIVE=prebuilt or =local
 * allows only that candidate (tests of one path).
 */
export function loadAddon(): AddonLoad {
  cached ??= loadAddonFrom(addonChoice(process.env['SHARP_NATIVE']));
  return cached;
}

/**
 * The addon for the `native` backend, which needs the typed-array binding: the one `loadAddon`
 * chose when it has it, else the local build when that has it (a prebuilt binary built before the
 * binding existed is passed over, with the reason), else none with every reason. Never throws.
 */
export function loadTypedAddon(): AddonLoad {
  cachedTyped ??= typedFrom(loadAddon(), addonChoice(process.env['SHARP_NATIVE']));
  return cachedTyped;
}

export function typedFrom(first: AddonLoad, choice: AddonChoice, local = addonPath): AddonLoad {
  if (!first.addon) return first;
  if (hasTypedBinding(first.addon)) return first;
  const stale =
    `${first.source ?? 'binary'} ${first.path} lacks the typed-array kernels (built before them: npm run ` +
    `build:prebuild)`;
  const skipped = [...first.skipped, stale];
  if (first.source === 'local build' || choice === 'prebuilt')
    return { addon: undefined, reason: skipped.join('; '), path: first.path, skipped };
  const second = loadAddonFrom('local', { prebuilt: '', local });
  if (second.addon && hasTypedBinding(second.addon)) return { ...second, skipped };
  const why = second.addon
    ? `local build ${local} lacks them too (run npm run build:native)`
    : `local build: ${second.reason}`;
  return { addon: undefined, reason: [...skipped, why].join('; '), path: local, skipped: [...skipped, why] };
}
