import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Atomic file writes (checkpoints and result files are temp file + rename), so a
 * crash or a full disk never leaves a half-written file under the real name: readers see the old
 * content or the new one. The temp file sits beside the target (same filesystem: rename is atomic).
 */

let counter = 0;

/** A temp path beside `file` (same filesystem, so rename is atomic), unique per process and call. */
function tempPathFor(file: string): string {
  counter += 1;
  return join(dirname(file), `.${basename(file)}.tmp-${process.pid}-${counter}`);
}

/**
 * Runs `write` on a fresh temp file beside `file`, fsyncs it, then renames it over `file`.
 * On any error (including the rename) the temp file is removed and the error rethrown; `file` is untouched.
 */
export async function withAtomicFile(file: string, write: (fh: FileHandle) => Promise<void>): Promise<void> {
  const tmp = tempPathFor(file);
  const fh = await open(tmp, 'wx');
  let closed = false;
  try {
    await write(fh);
    await fh.sync();
    closed = true;
    await fh.close();
    await rename(tmp, file);
  } catch (err) {
    // Every failure path (write, sync, close, rename) removes the temp file: nothing is left behind.
    if (!closed) await fh.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Writes `value` as pretty JSON (2-space indent, trailing newline, like HF's save_pretrained) atomically. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n');
}

/** Writes `data` to `file` atomically (synchronous: small results, configs, JSONL files). */
export function writeFileAtomic(file: string, data: string | Uint8Array): void {
  const tmp = tempPathFor(file);
  const fd = openSync(tmp, 'wx');
  let closed = false;
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
    fsyncSync(fd);
    closed = true;
    closeSync(fd);
    renameSync(tmp, file);
  } catch (err) {
    // As in withAtomicFile: the temp file never outlives a failed write, close or rename.
    if (!closed) {
      try {
        closeSync(fd);
      } catch {
        // already failing; the original error is the one to report
      }
    }
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Writes one JSON line per record atomically, creating the folder. */
export function writeJsonlAtomic(file: string, records: readonly unknown[]): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileAtomic(file, records.map((r) => JSON.stringify(r)).join('\n') + (records.length > 0 ? '\n' : ''));
}
