import { cpSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointHash } from './checkpoint-hash.ts';

const TINY = resolve(import.meta.dirname, '../../../models/tiny-random');

describe('checkpointHash', () => {
  it('is the same for a copy, different after one weight byte changes, and covers sharded folders', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-hash-'));
    const a = join(base, 'a');
    cpSync(TINY, a, { recursive: true });
    expect(checkpointHash(a)).toBe(checkpointHash(TINY));
    expect(checkpointHash(a)).toMatch(/^sha256:[0-9a-f]{64}$/);
    const f = join(a, 'model.safetensors');
    const b = readFileSync(f);
    b[b.length - 1] ^= 1;
    writeFileSync(f, b);
    expect(checkpointHash(a)).not.toBe(checkpointHash(TINY));
    // The same bytes as one shard behind an index: its own hash, which follows the shard's content.
    renameSync(f, join(a, 'model-00001-of-00001.safetensors'));
    writeFileSync(
      join(a, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: { w: 'model-00001-of-00001.safetensors' } }),
    );
    const sharded = checkpointHash(a);
    b[b.length - 1] ^= 1;
    writeFileSync(join(a, 'model-00001-of-00001.safetensors'), b);
    expect(checkpointHash(a)).not.toBe(sharded);
  });
});
