import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../errors.ts';
import { assertRegularFile, openRegularFile, readRegularFile, readTextFile } from './read-file.ts';

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

  it('openRegularFile and assertRegularFile: a regular file or a link to one, never a pipe behind a link', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-read-'));
    writeFileSync(join(dir, 'a.txt'), 'abc');
    symlinkSync(join(dir, 'a.txt'), join(dir, 'to-a'));
    execFileSync('mkfifo', [join(dir, 'p')]);
    symlinkSync(join(dir, 'p'), join(dir, 'to-p'));
    const { fd, size } = openRegularFile(join(dir, 'to-a'));
    closeSync(fd);
    expect(size).toBe(3);
    expect(() => assertRegularFile(join(dir, 'a.txt'))).not.toThrow();
    // Each would block forever in open(2) without O_NONBLOCK.
    expect(() => assertRegularFile(join(dir, 'to-p'), 'index x: passages.sqlite')).toThrow(
      new UserError('index x: passages.sqlite: not a regular file (a folder, device, pipe or socket); not read'),
    );
    expect(() => openRegularFile(join(dir, 'p'))).toThrow(/not a regular file/);
    expect(() => openRegularFile(dir)).toThrow(/not a regular file/);
  });
});
