import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { UserError } from '../errors.ts';

/** Why a path is refused: the one wording every reader of a user's path uses. */
const NOT_REGULAR = 'not a regular file (a folder, device, pipe or socket)';

/**
 * Opens a file a user or a run folder named for reading, only when it is a regular file: the one
 * gate of every reader of such a path. Opened with O_NONBLOCK: opening a named pipe for reading
 * otherwise waits for a writer (forever: the CLI or a server hangs), and a device such as /dev/zero
 * never ends; both are refused by fstat on the open descriptor (no race with a file replaced in
 * between) before a byte is read. A link is followed to what it names. `label` starts the message
 * (default: the path). A missing file is the system's ENOENT error. The caller closes `fd`.
 */
export function openRegularFile(file: string, label: string = file): { fd: number; size: number } {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UserError(`${label}: ${NOT_REGULAR}; not read`);
    return { fd, size: st.size };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/**
 * openRegularFile for a file a library opens by name (SQLite): checked, then closed, so the library's
 * own blocking open(2) never meets a pipe or a device (one swapped in after the check is not caught).
 */
export function assertRegularFile(file: string, label: string = file): void {
  closeSync(openRegularFile(file, label).fd);
}

/**
 * Reads a file a user or a run folder named (openRegularFile), only when it holds at most `maxBytes`;
 * `label` starts a refusal's message (default: the path).
 */
export function readRegularFile(file: string, maxBytes: number, label: string = file): Buffer {
  const { fd, size } = openRegularFile(file, label);
  try {
    if (size > maxBytes) throw new UserError(`${label}: ${size} bytes, more than the ${maxBytes} this file may hold`);
    const buf = Buffer.allocUnsafe(size);
    let off = 0;
    while (off < size) {
      const n = readSync(fd, buf, off, size - off, off);
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
    if (!st.isFile()) throw new UserError(`${file}: ${NOT_REGULAR}; not read`);
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
