import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * `npm run lint` runs knip after eslint, so an export nobody imports fails the lint. Proven on a
 * fixture project of its own (test/fixtures/knip-planted: one entry, one module with one planted
 * unused export), not on this repository, so the test stays fast and means the same whatever the
 * repository holds.
 */
const repo = resolve(import.meta.dirname, '..');
const knip = join(repo, 'node_modules', '.bin', 'knip');
const fixture = join(repo, 'test', 'fixtures', 'knip-planted');
const PLANTED = 'plantedUnusedExport';

function runKnip(dir: string): { code: number | null; out: string } {
  const r = spawnSync(knip, ['--no-progress', '--no-config-hints'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('knip in npm run lint', () => {
  it('runs after prettier and eslint', () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.lint).toMatch(/^prettier --check .* && eslint \. && knip\b/);
  });

  it('fails on the planted unused export and names it', () => {
    const r = runKnip(fixture);
    expect(r.code, r.out).not.toBe(0);
    expect(r.out).toMatch(/Unused exports \(1\)/);
    expect(r.out).toContain(PLANTED);
  }, 60_000);

  it('passes on the same project without it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-knip-'));
    try {
      cpSync(fixture, dir, { recursive: true });
      const file = join(dir, 'src', 'greet.ts');
      const source = readFileSync(file, 'utf8');
      const without = source.replace(new RegExp(`^export const ${PLANTED} .*\\n`, 'm'), '');
      expect(without).not.toBe(source);
      writeFileSync(file, without);
      const r = runKnip(dir);
      expect(r.code, r.out).toBe(0);
      expect(r.out).not.toContain(PLANTED);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
