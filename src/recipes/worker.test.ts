import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { missingRedisClient } from '../distributed/connection.ts';
import { UserError } from '../errors.ts';
import { sharp } from '../../test/cli-helpers.ts';
import { withDefaults, workerFlags, type GivenFlags } from './commands.ts';
import { checkWorkerFlags } from './worker.ts';

const workerOptions = (opts: GivenFlags<typeof workerFlags>) => checkWorkerFlags(withDefaults(workerFlags, opts));

/** `sharp worker`: the flags' defaults, and bad flags as one line and exit 2 through the real binary. */
const root = mkdtempSync(join(tmpdir(), 'sharp-worker-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(missingRedisClient() !== null)('workerOptions', () => {
  it('fills the defaults and refuses a bad concurrency or lock time', () => {
    expect(workerOptions({ redis: 'redis://h:7000' })).toEqual({
      redis: 'redis://h:7000',
      queue: 'sharp-rollout',
      concurrency: 1,
      lockS: 30,
      connectTimeoutS: 30,
    });
    expect(
      workerOptions({
        redis: 'redis://h',
        queue: 'q',
        concurrency: 3,
        lockS: 2.5,
        backend: 'wasm',
        connectTimeoutS: 0.5,
      }),
    ).toEqual({
      redis: 'redis://h',
      queue: 'q',
      concurrency: 3,
      backend: 'wasm',
      lockS: 2.5,
      connectTimeoutS: 0.5,
    });
    expect(() => workerOptions({ redis: 'redis://h', connectTimeoutS: 0 })).toThrow(
      new UserError('worker --connect-timeout-s: 0 is not a number of seconds in (0, 86400]'),
    );
    expect(() => workerOptions({ redis: 'redis://h', concurrency: 0 })).toThrow(
      new UserError(
        'worker --concurrency: 0 is not an integer in 1..64 (jobs at once in one process: each holds its rollouts ' +
          'in memory)',
      ),
    );
    expect(() => workerOptions({ redis: 'redis://h', concurrency: 1e9 })).toThrow(
      /^worker --concurrency: 1000000000 is not an integer in 1\.\.64 /,
    );
    expect(() => workerOptions({ redis: 'redis://h', lockS: 0 })).toThrow(
      new UserError('worker --lock-s: 0 is not a number of seconds in (0, 2147483]'),
    );
    // Renewed on a timer of lockS x 1000 ms, which Node would fire at once past 2^31 - 1 ms.
    expect(() => workerOptions({ redis: 'redis://h', lockS: 3e6 })).toThrow(
      new UserError('worker --lock-s: 3000000 is not a number of seconds in (0, 2147483]'),
    );
    expect(() => workerOptions({ redis: 'redis://h/x' })).toThrow(
      new UserError("worker --redis: Redis URL 'redis://h/x': database 'x' is not a non-negative integer"),
    );
  });
});

describe('sharp worker (bad input)', () => {
  it('a missing client library, a bad URL or a bad concurrency is one line and exit 2', async () => {
    const missing = missingRedisClient();
    const bad = await sharp(root, ['worker', '--redis', 'http://x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([
      missing
        ? `sharp: worker: ${missing}`
        : "sharp: worker --redis: not a Redis URL: 'http://x' (expected redis://host:port)",
    ]);
    const conc = await sharp(root, ['worker', '--redis', 'redis://127.0.0.1:1', '--concurrency', 'two']);
    expect(conc.code).toBe(2);
    expect(conc.stderr.trim().split('\n')).toEqual(["sharp: --concurrency expects an integer, got 'two'"]);
  }, 120_000);

  it.skipIf(missingRedisClient() !== null)(
    'a Redis unreachable for --connect-timeout-s at start is one line and exit 2, before serving',
    async () => {
      const t0 = Date.now();
      const r = await sharp(root, ['worker', '--redis', 'redis://127.0.0.1:1', '--connect-timeout-s', '1']);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toEqual([
        'sharp: worker: Redis at redis://127.0.0.1:1 unreachable for 1 s (connect ECONNREFUSED 127.0.0.1:1) (is it ' +
          'running? wait longer with --connect-timeout-s)',
      ]);
      expect(r.stderr).not.toContain('serving');
      expect(Date.now() - t0).toBeLessThan(60_000);
    },
    120_000,
  );
});
