import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { UserError } from '../errors.ts';

/**
 * Reads a file a user or a run folder named, only when it is a regular file of at most `maxBytes`.
 * Opened with O_NONBLOCK: opening a named pipe for reading otherwise waits for a writer (forever:
 * the CLI or the viewer hangs), and a device such as /dev/zero never ends; both are refused by fstat
 * on the open descriptor (no race with a file replaced in between) before a byte is read.
 */
export function readRegularFile(file: string, maxBytes: number): Buffer {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UserError(`${file}: not a regular file (a folder, device, pipe or socket); not read`);
    if (st.size > maxBytes)
      throw new UserError(`${file}: ${st.size} bytes, more than the ${maxBytes} this file may hold`);
    const buf = Buffer.allocUnsafe(st.size);
    let off = 0;
    while (off < st.size) {
      const n = readSync(fd, buf, off, st.size - off, off);
      if (n === 0) break; // truncated meanwhile: what is there
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

/** Longest text file read whole: about the longest string a JavaScript engine makes (V8: 2^29 - 24 characters). */
export const MAX_TEXT_BYTES = 2 ** 29 - 24;

/** readRegularFile as UTF-8 text, at most MAX_TEXT_BYTES unless `maxBytes` says less. */
export function readTextFile(file: string, maxBytes: number = MAX_TEXT_BYTES): string {
  return readRegularFile(file, maxBytes).toString('utf8');
}

/**
 * readRegularFile without blocking the event loop: the same checks, the reads on libuv's pool, so a
 * server answers other requests while a slow file is read.
 */
export async function readRegularFileAsync(file: string, maxBytes: number): Promise<Buffer> {
  const fh = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new UserError(`${file}: not a regular file (a folder, device, pipe or socket); not read`);
    if (st.size > maxBytes)
      throw new UserError(`${file}: ${st.size} bytes, more than the ${maxBytes} this file may hold`);
    const buf = Buffer.allocUnsafe(st.size);
    let off = 0;
    while (off < st.size) {
      const { bytesRead } = await fh.read(buf, off, st.size - off, off);
      if (bytesRead === 0) break; // truncated meanwhile: what is there
      off += bytesRead;
    }
    return buf.subarray(0, off);
  } finally {
    await fh.close();
  }
}
