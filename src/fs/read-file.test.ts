import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../errors.ts';
import { readRegularFile, readTextFile } from './read-file.ts';

describe('readRegularFile', () => {
  it('reads a regular file, refuses a pipe, a device, a folder and an oversized file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-read-'));
    writeFileSync(join(dir, 'a.txt'), 'héllo');
    expect(readTextFile(join(dir, 'a.txt'))).toBe('héllo');
    expect(() => readRegularFile(join(dir, 'a.txt'), 5)).toThrow(
      new UserError(`${join(dir, 'a.txt')}: 6 bytes, more than the 5 this file may hold`),
    );
    execFileSync('mkfifo', [join(dir, 'p')]);
    // Would block forever without O_NONBLOCK: no writer ever opens the pipe.
    expect(() => readRegularFile(join(dir, 'p'), 100)).toThrow(
      /p: not a regular file \(a folder, device, pipe or socket\); not read$/,
    );
    expect(() => readRegularFile('/dev/zero', 100)).toThrow(/not a regular file/);
    expect(() => readRegularFile(dir, 100)).toThrow(/not a regular file/);
    expect(() => readRegularFile(join(dir, 'missing'), 100)).toThrow(/ENOENT/);
  });
});
