/**
 * Checks on checkpoint files before and after reading them, so a corrupt or hostile folder gives
 * one line naming the file or tensor instead of a stack or a silently broken model.
 */
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { CheckpointError } from './errors.ts';
import type { HostTensor } from './safetensors.ts';

/** `file` must exist and be a regular file (a folder named config.json is a bad checkpoint, not EISDIR). */
export function assertRegularFile(file: string): void {
  let st;
  try {
    st = statSync(file);
  } catch {
    throw new CheckpointError(`${file}: missing`);
  }
  if (!st.isFile()) throw new CheckpointError(`${file}: not a regular file`);
}

/**
 * A shard named by `model.safetensors.index.json` must be a plain file name inside the checkpoint
 * folder: '..', '../x' or '/etc/x' would read outside it.
 */
export function assertShardName(indexFile: string, shard: string): void {
  if (shard === '' || shard === '.' || shard === '..' || basename(shard) !== shard || shard.includes('\\')) {
    throw new CheckpointError(`${indexFile}: shard name '${shard}' is not a file name inside the checkpoint folder`);
  }
}

/** Every weight must be finite: NaN/Inf weights load "fine" and then generate nothing. */
export function assertFiniteTensors(source: string, tensors: ReadonlyMap<string, HostTensor>): void {
  for (const [name, t] of tensors) {
    const d = t.data;
    for (let i = 0; i < d.length; i++) {
      const v = d[i] as number;
      // v - v is 0 for finite v and NaN for NaN or +-Infinity: one comparison per element.
      if (v - v !== 0)
        throw new CheckpointError(`${source}: tensor '${name}' has a non-finite value (${v}) at element ${i}`);
    }
  }
}
