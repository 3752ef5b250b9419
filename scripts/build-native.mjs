#!/usr/bin/env node
/* global process, console */
// Builds the native CPU kernels (native/) with node-gyp against the installed Node headers,
// offline. Runs as the package's `install` script, so it must NEVER fail an install: when a
// compiler, OpenBLAS or the Node headers are missing, or the build fails, it prints one line and
// exits 0 (sharp-rl then uses the pure-wasm fallback). `--strict` (npm run build:native) exits 1 on
// a failed build instead. SHARP_NATIVE=0 skips the build. At install, a prebuilt binary for this
// platform (prebuilds/, scripts/build-prebuild.mjs) whose sha256 matches the recorded one and that
// loads makes the local build unnecessary: it says so and skips it (SHARP_NATIVE=local builds anyway,
// and so does npm run build:native).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const strict = process.argv.includes('--strict');
const note = (msg) => console.log(`sharp-rl native kernels: ${msg}`);

function done(ok, msg) {
  note(msg);
  process.exit(ok || !strict ? 0 : 1);
}

if (process.env.SHARP_NATIVE === '0') done(true, 'skipped (SHARP_NATIVE=0)');

// The same checks as src/backend/native/addon.ts: the AVX2+FMA build where /proc/cpuinfo lists both
// flags (unless SHARP_NATIVE_AVX2=0), then the baseline one; each its recorded sha256, then a load.
function avx2Here() {
  if (process.env.SHARP_NATIVE_AVX2 === '0') return false;
  try {
    const flags = (/^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '').trim().split(/\s+/);
    return flags.includes('avx2') && flags.includes('fma');
  } catch {
    return false;
  }
}

function prebuiltOne(file) {
  const rel = file.slice(root.length + 1);
  if (!existsSync(file)) return { why: `no prebuilt binary ${rel} for ${process.platform}-${process.arch}` };
  if (!existsSync(`${file}.sha256`)) return { why: `${rel}.sha256 missing` };
  const want = readFileSync(`${file}.sha256`, 'utf8').trim().split(/\s+/)[0];
  const got = createHash('sha256').update(readFileSync(file)).digest('hex');
  if (got !== want)
    return { why: `${rel} has sha256 ${got.slice(0, 16)}..., ${rel}.sha256 records ${want.slice(0, 16)}...` };
  try {
    return { rel, config: createRequire(import.meta.url)(file).blasConfig() };
  } catch (err) {
    return { why: `${rel} failed to load: ${String(err?.message ?? err).split('\n')[0]}` };
  }
}

function prebuilt() {
  const dir = join(root, 'prebuilds', `${process.platform}-${process.arch}`);
  const names = [...(avx2Here() ? ['sharp_native.avx2.napi.glibc.node'] : []), 'sharp_native.napi.glibc.node'];
  const why = [];
  for (const name of names) {
    const p = prebuiltOne(join(dir, name));
    if (p.config) return p;
    why.push(p.why);
  }
  return { why: why.join('; ') };
}
if (!strict && process.env.SHARP_NATIVE !== 'local') {
  const p = prebuilt();
  if (p.config) done(true, `using the prebuilt ${p.rel} (${p.config}); local build skipped`);
  note(`${p.why}; trying a local build`);
}

const has = (cmd, args) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const cxx = process.env.CXX || 'c++';
if (!has(cxx, ['--version']) && !has('g++', ['--version']))
  done(false, `skipped: no C++ compiler (${cxx}); using the pure-wasm fallback`);
if (!has('make', ['--version'])) done(false, 'skipped: make not found; using the pure-wasm fallback');
if (!has(process.env.PYTHON || 'python3', ['--version']))
  done(false, 'skipped: python3 not found (node-gyp needs it); using the pure-wasm fallback');

const blasHeaders = [
  '/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h',
  '/usr/include/aarch64-linux-gnu/openblas-pthread/cblas.h',
  '/usr/include/openblas/cblas.h',
  '/usr/include/cblas.h',
  '/usr/include/x86_64-linux-gnu/cblas.h',
];
const blasLibDirs = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/usr/local/lib',
];
if (!blasHeaders.some(existsSync) || !blasLibDirs.some((d) => existsSync(join(d, 'libopenblas.so')))) {
  done(false, 'skipped: OpenBLAS not found (Debian: apt-get install libopenblas-dev); using the pure-wasm fallback');
}

// Node headers of the running node (offline: never let node-gyp download them).
const prefix = resolve(dirname(process.execPath), '..');
const nodedir = [prefix, '/usr', '/usr/local'].find((d) => existsSync(join(d, 'include', 'node', 'node_api.h')));
if (!nodedir) done(false, `skipped: Node headers not found under ${prefix}/include/node; using the pure-wasm fallback`);

let gyp;
try {
  gyp = createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js');
} catch {
  done(false, 'skipped: node-gyp is not installed; using the pure-wasm fallback');
}

const r = spawnSync(
  process.execPath,
  [gyp, 'rebuild', `--nodedir=${nodedir}`, '--directory=native', '--loglevel=warn'],
  { cwd: root, stdio: 'inherit', env: { ...process.env, npm_config_offline: 'true' } },
);
const built = join(root, 'native', 'build', 'Release', 'sharp_native.node');
if (r.status !== 0 || !existsSync(built))
  done(false, `build failed (node-gyp exit ${r.status ?? r.signal}); using the pure-wasm fallback`);

try {
  const addon = createRequire(import.meta.url)(built);
  done(true, `built ${built} (${addon.blasConfig()})`);
} catch (err) {
  done(false, `built but failed to load: ${String(err?.message ?? err).split('\n')[0]}; using the pure-wasm fallback`);
}
