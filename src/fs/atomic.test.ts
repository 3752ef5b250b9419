import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withAtomicFile, writeFileAtomic, writeJsonAtomic } from './atomic.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-atomic-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('atomic writes', () => {
  it('replaces the file and leaves no temp file', async () => {
    const f = join(dir, 'a.json');
    await writeFile(f, 'old');
    await writeJsonAtomic(f, { step: 3 });
    expect(await readFile(f, 'utf8')).toBe('{\n  "step": 3\n}\n');
    writeFileAtomic(f, new Uint8Array([104, 105]));
    expect(await readFile(f, 'utf8')).toBe('hi');
    expect(await readdir(dir)).toEqual(['a.json']);
  });

  it('keeps the old file intact when the write fails half way', async () => {
    const f = join(dir, 'b.bin');
    await writeFile(f, 'old content');
    await expect(
      withAtomicFile(f, async (fh) => {
        await fh.write('partial new');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(await readFile(f, 'utf8')).toBe('old content');
    expect((await readdir(dir)).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  it('removes the temp file when the rename fails (target is a folder), sync and async', async () => {
    const sub = join(dir, 'rename-fails');
    await mkdir(join(sub, 'target'), { recursive: true });
    await writeFile(join(sub, 'target', 'inside'), 'x'); // a non-empty folder: rename over it fails
    expect(() => writeFileAtomic(join(sub, 'target'), 'data')).toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    await expect(writeJsonAtomic(join(sub, 'target'), { a: 1 })).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    await expect(withAtomicFile(join(sub, 'target'), async (fh) => void (await fh.write('y')))).rejects.toThrow(
      /EISDIR|ENOTEMPTY|EEXIST/,
    );
    expect(await readdir(sub)).toEqual(['target']);
  });
});
