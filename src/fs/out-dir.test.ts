import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../errors.ts';
import { mkdirOut, prepareOutFile } from './out-dir.ts';

describe('mkdirOut / prepareOutFile', () => {
  it('creates missing parents and returns the absolute folder', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-out-'));
    expect(mkdirOut(join(base, 'a/b/c'), '--out')).toBe(join(base, 'a/b/c'));
    expect(statSync(join(base, 'a/b/c')).isDirectory()).toBe(true);
    expect(prepareOutFile(join(base, 'x/y/f.jsonl'), '--out')).toBe(join(base, 'x/y/f.jsonl'));
    expect(statSync(join(base, 'x/y')).isDirectory()).toBe(true);
  });

  it('fails at once, in one line, under /proc (where recursive mkdir loops forever)', () => {
    const cpu0 = process.cpuUsage();
    expect(() => mkdirOut('/proc/sharp-x/y', '--out')).toThrow(
      new UserError('--out /proc/sharp-x/y: cannot create folder (ENOENT at /proc/sharp-x)'),
    );
    // CPU time, not wall-clock: other jobs on a shared machine slow the clock, not the work.
    const cpu = process.cpuUsage(cpu0);
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(1000);
  });

  it('names a file in the way and a folder given as a file', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-out-'));
    writeFileSync(join(base, 'f'), '');
    mkdirSync(join(base, 'd'));
    expect(() => mkdirOut(join(base, 'f/sub'), '--out')).toThrow(
      `--out ${join(base, 'f/sub')}: ${join(base, 'f')} is not a folder`,
    );
    expect(() => prepareOutFile(join(base, 'd'), '--out')).toThrow(
      `--out ${join(base, 'd')}: is a folder, expected a file path`,
    );
  });
});
