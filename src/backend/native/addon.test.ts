import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  addonChoice,
  addonPath,
  avx2Here,
  loadAddon,
  loadAddonFrom,
  prebuiltAvx2Path,
  prebuiltCandidates,
  prebuiltPath,
  typedFrom,
  verifyPrebuilt,
  type AddonLoad,
  type NativeAddon,
} from './addon.ts';

/** DT_NEEDED entries of an ELF64 little-endian shared object (section headers: .dynamic and its string table). */
function elfNeeded(file: string): string[] {
  const b = readFileSync(file);
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1)
    throw new Error(`${file}: not an ELF64 little-endian file`);
  const shoff = Number(b.readBigUInt64LE(0x28));
  const shentsize = b.readUInt16LE(0x3a);
  const shnum = b.readUInt16LE(0x3c);
  const section = (i: number) => {
    const o = shoff + i * shentsize;
    return {
      type: b.readUInt32LE(o + 4),
      offset: Number(b.readBigUInt64LE(o + 0x18)),
      size: Number(b.readBigUInt64LE(o + 0x20)),
      link: b.readUInt32LE(o + 0x28),
    };
  };
  const needed: string[] = [];
  for (let i = 0; i < shnum; i++) {
    const s = section(i);
    if (s.type !== 6) continue; // SHT_DYNAMIC
    const str = section(s.link);
    for (let o = s.offset; o < s.offset + s.size; o += 16) {
      const tag = b.readBigInt64LE(o);
      if (tag === 0n) break; // DT_NULL
      if (tag !== 1n) continue; // DT_NEEDED
      const at = str.offset + Number(b.readBigUInt64LE(o + 8));
      needed.push(b.toString('latin1', at, b.indexOf(0, at)));
    }
  }
  return needed;
}

const hasPrebuilt = existsSync(prebuiltPath);
const dir = mkdtempSync(join(tmpdir(), 'sharp-addon-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('native addon loader', () => {
  it('reads SHARP_NATIVE: 0 disables, prebuilt/local allow one candidate, anything else tries both', () => {
    expect(addonChoice('0')).toBe('off');
    expect(addonChoice('prebuilt')).toBe('prebuilt');
    expect(addonChoice('local')).toBe('local');
    expect(addonChoice(undefined)).toBe('auto');
    expect(addonChoice('1')).toBe('auto');
    expect(loadAddonFrom('off')).toEqual({
      addon: undefined,
      reason: 'disabled by SHARP_NATIVE=0',
      path: addonPath,
      skipped: [],
    });
  });

  it('says why a prebuilt binary is passed over: missing, no recorded sha256, a different sha256', () => {
    const file = join(dir, 'x.node');
    expect(verifyPrebuilt(file)).toBe(`no prebuilt kernels for ${process.platform}-${process.arch} (${file} missing)`);
    writeFileSync(file, 'not an addon');
    expect(verifyPrebuilt(file)).toBe(`prebuilt ${file} has no recorded sha256 (${file}.sha256 missing); skipped`);
    writeFileSync(`${file}.sha256`, `${'0'.repeat(64)}  x.node\n`);
    const got = createHash('sha256').update('not an addon').digest('hex');
    expect(verifyPrebuilt(file)).toBe(
      `prebuilt ${file} has sha256 ${got.slice(0, 16)}..., ${file}.sha256 records 0000000000000000...: not the ` +
        `committed build; skipped`,
    );
    writeFileSync(`${file}.sha256`, `${got}  x.node\n`);
    expect(verifyPrebuilt(file)).toBe('');
    // Right checksum but not a loadable addon: passed over with the loader's message, then the local build is tried.
    const r = loadAddonFrom('auto', { prebuilt: file, local: join(dir, 'missing.node') });
    expect(r.addon).toBeUndefined();
    expect(r.skipped).toHaveLength(1);
    expect(r.skipped[0]).toMatch(new RegExp(`^prebuilt ${file} failed to load: .+`));
    expect(r.reason).toBe(
      `${r.skipped[0]}; not built (${join(dir, 'missing.node')} missing; run npm run build:native)`,
    );
  });

  it.skipIf(!hasPrebuilt)('skips a prebuilt binary changed after its build and falls back to the local one', () => {
    const copy = join(dir, 'tampered.node');
    const bytes = readFileSync(prebuiltPath);
    bytes[bytes.length - 1] ^= 1;
    writeFileSync(copy, bytes);
    copyFileSync(`${prebuiltPath}.sha256`, `${copy}.sha256`);
    const only = loadAddonFrom('prebuilt', { prebuilt: copy, local: addonPath });
    expect(only.addon).toBeUndefined();
    expect(only.reason).toMatch(
      /has sha256 [0-9a-f]{16}\.\.\., .+ records [0-9a-f]{16}\.\.\.: not the committed build; skipped \(SHARP_NATIVE=prebuilt\)$/,
    );
    // The local build loads only where its OpenBLAS is installed (scripts/test-prebuilt.sh hides it).
    if (loadAddonFrom('local').addon) {
      const r = loadAddonFrom('auto', { prebuilt: copy, local: addonPath });
      expect(r.source).toBe('local build');
      expect(r.skipped[0]).toMatch(/not the committed build; skipped$/);
    }
  });

  it.skipIf(!hasPrebuilt)(
    'both committed prebuilt binaries match their sha256, need only glibc and the C++ runtime, and carry OpenBLAS',
    () => {
      const info = JSON.parse(readFileSync(join(prebuiltPath, '..', 'build-info.json'), 'utf8')) as {
        binaries: { file: string; sha256: string; bytes: number; needs: string[]; blasConfig: string }[];
      };
      expect(info.binaries.map((b) => b.file)).toEqual([
        'sharp_native.avx2.napi.glibc.node',
        'sharp_native.napi.glibc.node',
      ]);
      for (const [file, kernels] of [
        [prebuiltAvx2Path, 'AVX2+FMA'],
        [prebuiltPath, 'x86-64 baseline'],
      ] as const) {
        expect(verifyPrebuilt(file)).toBe('');
        const recorded = readFileSync(`${file}.sha256`, 'utf8');
        expect(recorded).toBe(`${createHash('sha256').update(readFileSync(file)).digest('hex')}  ${basename(file)}\n`);
        // No libopenblas, libgfortran or libblas: OpenBLAS is inside. libstdc++ and libgcc_s are Node's own
        // dependencies.
        expect(elfNeeded(file).sort()).toEqual([
          'libc.so.6',
          'libgcc_s.so.1',
          'libm.so.6',
          'libpthread.so.0',
          'libstdc++.so.6',
        ]);
        const entry = info.binaries.find((b) => b.file === basename(file))!;
        expect(entry.sha256).toBe(recorded.split(' ')[0]);
        expect(entry.bytes).toBe(readFileSync(file).length);
        expect(entry.blasConfig).toMatch(
          new RegExp(`^OpenBLAS 0\\.3\\.21 .*DYNAMIC_ARCH.*; kernels ${kernels.replace('+', '\\+')}$`),
        );
      }
      expect(existsSync(join(prebuiltPath, '..', 'OpenBLAS-LICENSE.txt'))).toBe(true);
    },
  );

  it.skipIf(!hasPrebuilt)(
    'loads the AVX2+FMA build exactly where /proc/cpuinfo lists both flags, unless SHARP_NATIVE_AVX2=0',
    () => {
      const cpu = join(dir, 'cpuinfo');
      writeFileSync(cpu, 'processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n');
      expect(avx2Here('', cpu)).toBe(true);
      expect(avx2Here('0', cpu)).toBe(false);
      writeFileSync(cpu, 'processor\t: 0\nflags\t\t: fpu sse2 avx\n');
      expect(avx2Here('', cpu)).toBe(false);
      expect(avx2Here('', join(dir, 'no-cpuinfo'))).toBe(false);
      expect(prebuiltCandidates(true)).toEqual([prebuiltAvx2Path, prebuiltPath]);
      expect(prebuiltCandidates(false)).toEqual([prebuiltPath]);
      const r = loadAddonFrom('prebuilt');
      expect(r.source).toBe('prebuilt');
      const avx2 = avx2Here();
      expect(r.path).toBe(avx2 ? prebuiltAvx2Path : prebuiltPath);
      expect(r.addon!.blasConfig()).toMatch(avx2 ? /; kernels AVX2\+FMA$/ : /; kernels x86-64 baseline$/);
    },
  );

  it(
    'the native backend passes over a binary without the typed-array kernels, for the local build when that has ' +
      'them',
    () => {
      const old = { blasConfig: () => 'old', matmul: () => 0 } as unknown as NativeAddon;
      const first: AddonLoad = { addon: old, reason: '', path: '/p/x.node', source: 'prebuilt', skipped: [] };
      const missing = join(dir, 'missing.node');
      const r = typedFrom(first, 'auto', missing);
      expect(r.addon).toBeUndefined();
      expect(r.reason).toBe(
        `prebuilt /p/x.node lacks the typed-array kernels (built before them: npm run build:prebuild); local ` +
          `build: not built (${missing} missing; run npm run build:native)`,
      );
      expect(typedFrom(first, 'prebuilt', missing).reason).toBe(
        'prebuilt /p/x.node lacks the typed-array kernels (built before them: npm run build:prebuild)',
      );
      expect(typedFrom({ ...first, addon: undefined, reason: 'off' }, 'auto', missing).reason).toBe('off');
      if (existsSync(addonPath) && loadAddonFrom('local').addon?.typed) {
        const local = typedFrom(first, 'auto', addonPath);
        expect(local.source).toBe('local build');
        expect(local.skipped.at(-1)).toMatch(/lacks the typed-array kernels/);
      }
    },
  );

  it('with SHARP_NATIVE=prebuilt or =local, the process runs on that binary or the run fails here', () => {
    const want = process.env['SHARP_NATIVE'];
    const r = loadAddon();
    if (want === 'prebuilt') expect({ source: r.source, reason: r.reason }).toEqual({ source: 'prebuilt', reason: '' });
    else if (want === 'local')
      expect({ source: r.source, reason: r.reason }).toEqual({ source: 'local build', reason: '' });
    else if (want === '0') expect(r.addon).toBeUndefined();
    else expect(r.source).toBe(hasPrebuilt ? 'prebuilt' : existsSync(addonPath) ? 'local build' : undefined);
  });
});
