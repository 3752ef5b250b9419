import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRedisClient } from '../../distributed/connection.ts';

/** `sharp worker` through the real binary: bad flags are one line and exit 2. */
const root = join(import.meta.dirname, '../../..');

function sharp(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [join(root, 'bin/sharp.js'), ...args], { env: { ...process.env, FORCE_COLOR: '0' }, timeout: 60_000 });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => res({ code, stderr }));
  });
}

describe('sharp worker (bad input)', () => {
  it('a missing client library, a bad URL or a bad concurrency is one line and exit 2', async () => {
    const missing = missingRedisClient();
    const bad = await sharp(['worker', '--redis', 'http://x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([missing ? `sharp: worker: ${missing}` : "sharp: worker --redis: not a Redis URL: 'http://x' (expected redis://host:port)"]);
    const conc = await sharp(['worker', '--redis', 'redis://127.0.0.1:1', '--concurrency', 'two']);
    expect(conc.code).toBe(2);
    expect(conc.stderr.trim().split('\n')).toEqual(["sharp: --concurrency expects an integer, got 'two'"]);
  }, 120_000);
});
