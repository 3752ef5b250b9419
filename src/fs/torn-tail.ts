import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readSync } from 'node:fs';

/**
 * Cuts an append-only JSONL log back to its last complete line. A kill mid-append leaves a torn
 * last line without its newline; readers skip it, but the next append would be glued onto it and
 * turn a recoverable tail into a corrupt middle line (found by the resume test of `sharp eval`).
 * Returns the number of bytes dropped.
 */
export function dropTornTail(file: string): number {
  if (!existsSync(file)) return 0;
  const fd = openSync(file, 'r+');
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return 0;
    // Scan backwards in chunks for the last '\n' (logs can be large; the tail is short).
    const chunk = Buffer.alloc(64 * 1024);
    let end = size;
    while (end > 0) {
      const start = Math.max(0, end - chunk.length);
      const n = readSync(fd, chunk, 0, end - start, start);
      const i = chunk.subarray(0, n).lastIndexOf(0x0a);
      if (i >= 0) {
        const keep = start + i + 1;
        if (keep < size) ftruncateSync(fd, keep);
        return size - keep;
      }
      end = start;
    }
    ftruncateSync(fd, 0); // no newline at all: the only line is torn
    return size;
  } finally {
    closeSync(fd);
  }
}
