#!/usr/bin/env node
/* global process, console */
// Builds the prebuilt native kernels for linux-x64, the addon of native/src with OpenBLAS linked in
// statically, so that a machine without OpenBLAS or a compiler runs the native kernels
// (src/backend/native/addon.ts loads one first, after checking the sha256 recorded beside it). Two
// binaries of the same sources: prebuilds/linux-x64/sharp_native.avx2.napi.glibc.node compiled for
// AVX2+FMA (loaded where the CPU has both) and sharp_native.napi.glibc.node for the x86-64 baseline
// (every other x86-64 CPU). `npm run build:prebuild` writes the binaries, their .sha256 files,
// build-info.json (every input) and OpenBLAS's license; `npm run build:prebuild -- --check` rebuilds
// and compares with the committed binaries instead of writing (exit 1 on a difference).
// prebuilds/README.md describes the inputs.
//
// Inputs, all fixed here: OpenBLAS from Debian's source package (the orig tarball, sha256 pinned),
// built with DYNAMIC_ARCH for a list of x86-64 cores (OpenBLAS picks the kernels of the CPU it runs
// on), single precision only, no LAPACK, no Fortran; the addon compiled for the x86-64 baseline and
// for AVX2+FMA with N-API version 8 (one binary for Node 20 and 22); OpenBLAS's symbols kept local; glibc >= 2.27 and
// the C++ runtime Node itself links (libstdc++, libgcc_s) are all it needs. The two tarballs
// of the source package come from --source-dir=DIR, else from `apt-get source` (Debian's deb-src,
// into the work folder: this script is the one step that downloads, and it runs only when the
// prebuilt binary is rebuilt). Work folder: --work=DIR, SHARP_PREBUILD_WORK, or <tmp>/sharp-rl-prebuild.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const check = args.includes('--check');

const fail = (msg) => {
  console.error(`build:prebuild: ${msg}`);
  process.exit(1);
};
const say = (msg) => console.log(`build:prebuild: ${msg}`);

if (process.platform !== 'linux' || process.arch !== 'x64')
  fail(`builds linux-x64 only (this is ${process.platform}-${process.arch})`);

const OPENBLAS = {
  version: '0.3.21',
  debianVersion: '0.3.21+ds-4',
  debianSource: 'openblas 0.3.21+ds-4 (Debian bookworm source package)',
  tarball: 'openblas_0.3.21+ds.orig.tar.xz',
  sha256: 'bbec5cca61c8033b2d57aaecde205d709323a0b35a5f193290081dbb3826848a',
  debianTarball: 'openblas_0.3.21+ds-4.debian.tar.xz',
  debianSha256: 'cb8ded6f29379c6a720ce3e7b62f9884419c7d3ba66e49184a3c09272af2065b',
};
// DYNAMIC_LIST: the cores whose kernels are built; every other x86-64 CPU runs the nearest one below
// it (driver/others/dynamic.c), PRESCOTT (SSE3) at the bottom. Debian's full list made a 25 MB binary.
const DYNAMIC_LIST = 'CORE2 NEHALEM SANDYBRIDGE HASWELL ZEN SKYLAKEX COOPERLAKE';
const NAPI_VERSION = 8;
// The addon's own loops: the x86-64 baseline (SSE2), as Node itself requires nothing more, and the
// same with AVX2+FMA (x86-64 CPUs since 2013-2015; the loader picks it where /proc/cpuinfo lists
// both). The GEMMs run OpenBLAS's kernels for the CPU found at run time in both.
const MARCH = '-march=x86-64 -mtune=generic';
const VARIANTS = [
  { name: 'sharp_native.avx2.napi.glibc.node', flags: ['-mavx2', '-mfma'], kernels: 'AVX2+FMA' },
  { name: 'sharp_native.napi.glibc.node', flags: [], kernels: 'x86-64 baseline' },
];

const work = resolve(opt('work') ?? process.env.SHARP_PREBUILD_WORK ?? join(tmpdir(), 'sharp-rl-prebuild'));
const outDir = join(root, 'prebuilds', 'linux-x64');

function run(cmd, argv, options = {}) {
  const r = spawnSync(cmd, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    ...options,
  });
  if (r.status !== 0) {
    const tail = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
    fail(
      `${cmd} ${argv.slice(0, 3).join(' ')} ... exited ` +
        `${r.status ?? r.signal}${r.error ? ` (${r.error.message})` : ''}\n${tail}`,
    );
  }
  return r.stdout;
}
const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');
const firstLine = (cmd, argv) => run(cmd, argv).split('\n')[0].trim();

// 1. The OpenBLAS sources (Debian's orig and debian tarballs), checked against the pinned sha256s.
mkdirSync(work, { recursive: true });
const sourceDir = resolve(opt('source-dir') ?? work);
const tarball = join(sourceDir, OPENBLAS.tarball);
const debianTarball = join(sourceDir, OPENBLAS.debianTarball);
if (!existsSync(tarball) || !existsSync(debianTarball)) {
  if (opt('source-dir')) fail(`${sourceDir} lacks ${OPENBLAS.tarball} or ${OPENBLAS.debianTarball}`);
  say(`fetching ${OPENBLAS.debianSource} with apt-get source`);
  const apt = join(work, 'apt');
  mkdirSync(join(apt, 'lists', 'partial'), { recursive: true });
  mkdirSync(join(apt, 'cache', 'archives', 'partial'), { recursive: true });
  writeFileSync(join(apt, 'sources.list'), 'deb-src http://deb.debian.org/debian bookworm main\n');
  const aptOpts = [
    '-o',
    `Dir::Etc::SourceList=${join(apt, 'sources.list')}`,
    '-o',
    'Dir::Etc::SourceParts=/dev/null',
    '-o',
    `Dir::State::Lists=${join(apt, 'lists')}`,
    '-o',
    `Dir::Cache=${join(apt, 'cache')}`,
  ];
  run('apt-get', [...aptOpts, 'update']);
  run('apt-get', [...aptOpts, 'source', '--download-only', `openblas=${OPENBLAS.debianVersion}`], { cwd: work });
}
for (const [file, want] of [
  [tarball, OPENBLAS.sha256],
  [debianTarball, OPENBLAS.debianSha256],
]) {
  if (sha256(file) !== want) fail(`${file}: sha256 ${sha256(file)}, expected ${want}`);
}

// 2. OpenBLAS, static, from a fresh copy of the source (kept between runs: the inputs are fixed).
const srcDir = join(work, `OpenBLAS-${OPENBLAS.version}`);
const openblasMake = [
  'libs',
  'DYNAMIC_ARCH=1',
  `DYNAMIC_LIST=${DYNAMIC_LIST}`,
  'TARGET=GENERIC',
  'BUILD_SINGLE=1',
  'NO_LAPACK=1',
  'NO_LAPACKE=1',
  'NOFORTRAN=1',
  'ONLY_CBLAS=1',
  'NO_SHARED=1',
  'USE_THREAD=1',
  'NUM_THREADS=64',
  'NO_AFFINITY=1',
  'NO_WARMUP=1',
  `COMMON_OPT=-O2 -ffile-prefix-map=${srcDir}=openblas`,
];
const stamp = join(work, 'openblas.stamp');
const stampText = JSON.stringify({ tarball: OPENBLAS.sha256, make: openblasMake });
const lib = join(srcDir, `libopenblasp-r${OPENBLAS.version}.a`);
if (!existsSync(lib) || !existsSync(stamp) || readFileSync(stamp, 'utf8') !== stampText) {
  rmSync(srcDir, { recursive: true, force: true });
  run('tar', ['-xf', tarball, '-C', work]);
  say(`building OpenBLAS ${OPENBLAS.version} (DYNAMIC_ARCH: ${DYNAMIC_LIST}); about 15 min on 2 cores`);
  run('make', [`-j${Math.max(1, Number(process.env.JOBS) || 2)}`, ...openblasMake], { cwd: srcDir });
  writeFileSync(stamp, stampText);
}
if (!existsSync(lib)) fail(`${lib} missing after the OpenBLAS build`);

// 3. The addon.
const prefix = resolve(dirname(process.execPath), '..');
const nodeInclude = [prefix, '/usr', '/usr/local']
  .map((d) => join(d, 'include', 'node'))
  .find((d) => existsSync(join(d, 'node_api.h')));
if (!nodeInclude) fail(`Node headers not found under ${prefix}/include/node`);
const naaDir = dirname(require.resolve('node-addon-api/package.json'));
const naaVersion = JSON.parse(readFileSync(join(naaDir, 'package.json'), 'utf8')).version;
const cxx = process.env.CXX || 'g++';
const sources = readdirSync(join(root, 'native', 'src'))
  .filter((f) => f.endsWith('.cc'))
  .sort()
  .map((f) => `native/src/${f}`);
const cxxflags = [
  '-O3',
  ...MARCH.split(' '),
  '-std=c++17',
  '-fno-math-errno',
  '-fno-trapping-math',
  '-fPIC',
  '-fvisibility=hidden',
  `-DNAPI_VERSION=${NAPI_VERSION}`,
  '-DNAPI_DISABLE_CPP_EXCEPTIONS',
  `-ffile-prefix-map=${root}=.`,
];
// native/prebuild/glibc-compat.cc binds these to their glibc 2.27 versions (see there).
const wrapped = ['pthread_create', 'pthread_join', 'pthread_getaffinity_np', 'pthread_setaffinity_np', 'pow'];
const ldflags = [
  '-shared',
  '-s',
  '-Wl,--exclude-libs,ALL',
  ...wrapped.map((f) => `-Wl,--wrap=${f}`),
  '-Wl,--as-needed',
  '-Wl,-z,noexecstack',
  '-Wl,-z,relro',
  '-Wl,-z,now',
];
const libs = [lib, '-Wl,--no-as-needed', '-l:libpthread.so.0', '-Wl,--as-needed', '-lm'];
const objDir = join(work, 'obj');
const allSources = [...sources, 'native/prebuild/glibc-compat.cc'];

/** Compiles and links one variant into the work folder and checks what it needs; returns its facts. */
function buildVariant(v) {
  const built = join(work, v.name);
  const dir = join(objDir, v.name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const objects = allSources.map((src) => {
    const obj = join(dir, `${src.replace(/[/.]/g, '_')}.o`);
    run(cxx, ['-c', ...cxxflags, ...v.flags, `-I${nodeInclude}`, `-I${naaDir}`, `-I${srcDir}`, src, '-o', obj], {
      cwd: root,
    });
    return obj;
  });
  run(cxx, [...objects, ...ldflags, '-o', built, ...libs], { cwd: root });

  // What it needs from the system: glibc, and the C++ runtime that Node itself links (libstdc++,
  // libgcc_s); no BLAS, no Fortran. Then the newest symbol versions it asks for.
  const needed = [...run('readelf', ['-d', built]).matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map(
    (m) => m[1],
  );
  const allowed = new Set(['libc.so.6', 'libm.so.6', 'libpthread.so.0', 'libstdc++.so.6', 'libgcc_s.so.1']);
  const extra = needed.filter((n) => !allowed.has(n));
  if (extra.length > 0) fail(`${built} needs ${extra.join(', ')} (only glibc and the C++ runtime are allowed)`);
  const newest = (prefix) =>
    [...run('objdump', ['-T', built]).matchAll(new RegExp(`${prefix}_(\\d+)\\.(\\d+)(?:\\.(\\d+))?`, 'g'))]
      .map((m) => [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2])
      .pop()
      ?.filter((x, i) => i < 2 || x > 0)
      .join('.') ?? 'none';
  const glibcMin = newest('GLIBC');
  const cxxabiMin = newest('CXXABI');
  const older = (a, b) =>
    a
      .split('.')
      .map(Number)
      .reduce((d, x, i) => d || x - (b.split('.').map(Number)[i] ?? 0), 0) <= 0;
  if (!older(glibcMin, '2.27'))
    fail(
      `${built} asks for glibc ${glibcMin}; the binary is meant to load on glibc >= 2.27 ` +
        `(native/prebuild/glibc-compat.cc)`,
    );

  // It loads, it is the OpenBLAS built above, and its loops are the ones asked for.
  const probe = spawnSync(
    process.execPath,
    [
      '-e',
      `const a = require(${JSON.stringify(built)}); console.log(a.blasConfig()); a.setThreads(2); ` +
        `console.log(a.getThreads());`,
    ],
    { encoding: 'utf8' },
  );
  if (probe.status !== 0) fail(`${built} does not load: ${probe.stderr.trim().split('\n')[0]}`);
  const [blasConfig] = probe.stdout.trim().split('\n');
  if (
    !blasConfig.includes(`OpenBLAS ${OPENBLAS.version}`) ||
    !blasConfig.includes('DYNAMIC_ARCH') ||
    !blasConfig.endsWith(`; kernels ${v.kernels}`)
  )
    fail(`unexpected blasConfig of ${v.name}: ${blasConfig}`);
  const flags = [...cxxflags.filter((f) => !f.startsWith('-ffile-prefix-map')), ...v.flags];
  return {
    file: v.name,
    built,
    sha256: sha256(built),
    bytes: readFileSync(built).length,
    needs: needed,
    glibcMin,
    cxxabiMin,
    blasConfig,
    cxxflags: flags,
  };
}

const builds = VARIANTS.map(buildVariant);
if (check) {
  for (const b of builds) {
    const target = join(outDir, b.file);
    const committed = existsSync(target) ? sha256(target) : 'missing';
    if (committed !== b.sha256)
      fail(`rebuilt sha256 ${b.sha256} differs from the committed ${relative(root, target)} (${committed})`);
    say(`rebuilt ${b.file}: ${b.bytes} bytes, sha256 ${b.sha256}, identical to the committed binary`);
  }
  process.exit(0);
}

// The binaries, their sha256 (sha256sum's format: `sha256sum -c` checks it), their inputs and the license.
mkdirSync(outDir, { recursive: true });
for (const b of builds) {
  copyFileSync(b.built, join(outDir, b.file));
  writeFileSync(join(outDir, `${b.file}.sha256`), `${b.sha256}  ${b.file}\n`);
}
const info = {
  platform: 'linux-x64',
  napiVersion: NAPI_VERSION,
  binaries: builds.map((b) => ({ ...b, built: undefined })),
  compiler: firstLine(cxx, ['--version']),
  nodeHeaders: `${process.version} (${nodeInclude})`,
  nodeAddonApi: naaVersion,
  ldflags,
  openblas: { ...OPENBLAS, make: openblasMake.filter((f) => !f.startsWith('COMMON_OPT')).concat('COMMON_OPT=-O2') },
  sources: allSources,
};
writeFileSync(join(outDir, 'build-info.json'), `${JSON.stringify(info, null, 2)}\n`);
const license = readFileSync(join(srcDir, 'LICENSE'), 'utf8');
const copyright = run('tar', ['-xOf', debianTarball, 'debian/copyright']);
writeFileSync(
  join(outDir, 'OpenBLAS-LICENSE.txt'),
  `${VARIANTS.map((v) => v.name).join(' and ')} contain OpenBLAS ${OPENBLAS.version} (https://www.openblas.net/), ` +
    `linked statically,\nbuilt from ${OPENBLAS.tarball} of ${OPENBLAS.debianSource}.\n\n== OpenBLAS LICENSE ` +
    `==\n\n${license.trim()}\n\n== Debian's copyright file for the package (all copyright holders) ` +
    `==\n\n${copyright.trim()}\n`,
);
for (const b of builds)
  say(
    `wrote ${relative(root, join(outDir, b.file))}: ${b.bytes} bytes, sha256 ${b.sha256}; needs ` +
      `${b.needs.join(', ')} (glibc >= ${b.glibcMin}, CXXABI ${b.cxxabiMin}); ${b.blasConfig}`,
  );
