import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A content hash of a checkpoint folder: config.json and the weights (model.safetensors, or the
 * index and every shard it names), each file's name and bytes in a fixed order. A resumed eval keys
 * its predictions on this, not on the folder's path, so a model replaced in place is never mixed
 * with the predictions of the one before. Read in 4 MiB pieces: a multi-GB checkpoint costs
 * seconds and no memory.
 */
const CHUNK = 4 * 1024 * 1024;

function weightFiles(dir: string): string[] {
  if (existsSync(join(dir, 'model.safetensors'))) return ['model.safetensors'];
  const index = join(dir, 'model.safetensors.index.json');
  if (!existsSync(index)) return [];
  const map = (JSON.parse(readFileSync(index, 'utf8')) as { weight_map?: Record<string, string> }).weight_map ?? {};
  return ['model.safetensors.index.json', ...[...new Set(Object.values(map))].sort()];
}

export function checkpointHash(dir: string): string {
  const h = createHash('sha256');
  const buf = Buffer.allocUnsafe(CHUNK);
  for (const name of ['config.json', ...weightFiles(dir)]) {
    h.update(`${name}\0`);
    const fd = openSync(join(dir, name), 'r');
    try {
      for (let n = readSync(fd, buf, 0, CHUNK, null); n > 0; n = readSync(fd, buf, 0, CHUNK, null))
        h.update(buf.subarray(0, n));
    } finally {
      closeSync(fd);
    }
    h.update('\0');
  }
  return `sha256:${h.digest('hex')}`;
}
