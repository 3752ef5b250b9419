import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Atomic file writes (DEVELOPERS.md: files we write are temp file + rename), so a crash or a full
 * disk never leaves a half-written checkpoint under the real name: readers see the old file or the
 * new one.
 */

let counter = 0;

/** A temp path beside `file` (same filesystem, so rename is atomic), unique per process and call. */
export function tempPathFor(file: string): string {
  counter += 1;
  return join(dirname(file), `.${basename(file)}.tmp-${process.pid}-${counter}`);
}

/**
 * Runs `write` on a fresh temp file beside `file`, fsyncs it, then renames it over `file`.
 * On any error the temp file is removed and the error rethrown; `file` is untouched.
 */
export async function withAtomicFile(file: string, write: (fh: FileHandle) => Promise<void>): Promise<void> {
  const tmp = tempPathFor(file);
  const fh = await open(tmp, 'wx');
  try {
    await write(fh);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  try {
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Writes `data` to `file` atomically. */
export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  await withAtomicFile(file, async (fh) => {
    await fh.writeFile(data);
  });
}

/** Writes `value` as pretty JSON (2-space indent, trailing newline, like HF's save_pretrained) atomically. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n');
}
