import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishDir } from './publish-dir.ts';

function staged(base: string, name: string, content: string): string {
  const d = join(base, name);
  mkdirSync(d);
  writeFileSync(join(d, 'done'), content);
  return d;
}

describe('publishDir', () => {
  it('the first writer creates the folder; a second finds it complete and succeeds without touching it', async () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-publish-'));
    const a = staged(base, '.out.tmp-a', 'A');
    const b = staged(base, '.out.tmp-b', 'B');
    const complete = (d: string) => existsSync(join(d, 'done'));
    const results = await Promise.all([
      publishDir(a, join(base, 'out'), complete),
      publishDir(b, join(base, 'out'), complete),
    ]);
    expect([...results].sort()).toEqual(['created', 'existing']);
    expect(readdirSync(base)).toEqual(['out']); // both temp folders gone
    expect(['A', 'B']).toContain(readFileSync(join(base, 'out', 'done'), 'utf8'));
  });

  it('an incomplete folder in the way is an error, and the temp folder is removed', async () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-publish-'));
    mkdirSync(join(base, 'out'));
    writeFileSync(join(base, 'out', 'partial'), '');
    const a = staged(base, '.out.tmp-a', 'A');
    await expect(publishDir(a, join(base, 'out'), (d) => existsSync(join(d, 'done')))).rejects.toThrow(
      /ENOTEMPTY|EEXIST/,
    );
    expect(readdirSync(base)).toEqual(['out']);
  });
});
