import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { configFrom, prefixCacheBytes, resumeDir, withRun } from './run-setup.ts';

describe('prefixCacheBytes', () => {
  it('rollout.prefixCacheMiB in bytes, off in distributed runs (redis or local)', () => {
    const cfg = configSchema.parse({});
    expect(prefixCacheBytes(cfg)).toBe(512 * 2 ** 20);
    expect(prefixCacheBytes({ ...cfg, rollout: { ...cfg.rollout, prefixCacheMiB: 3 } })).toBe(3 * 2 ** 20);
    expect(
      prefixCacheBytes({
        ...cfg,
        rollout: { ...cfg.rollout, distributed: { ...cfg.rollout.distributed, local: true } },
      }),
    ).toBe(0);
    expect(
      prefixCacheBytes({
        ...cfg,
        rollout: { ...cfg.rollout, distributed: { ...cfg.rollout.distributed, redis: 'redis://127.0.0.1:6379' } },
      }),
    ).toBe(0);
  });
});

describe('resumeDir', () => {
  it('--resume without a value picks the newest run of this name; with a value, that folder', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-resume-'));
    for (const d of [
      'qs-20261130T010000Z',
      'qs-20261130T020000Z',
      'qs-other',
      'qsx-20261130T030000Z',
      'other-20261130T040000Z',
    ]) {
      mkdirSync(join(base, d));
      writeFileSync(join(base, d, 'config.yaml'), '{}\n'); // what createRunDir writes first
    }
    const cfg = configSchema.parse({ run: { name: 'qs', dir: base } });
    expect(resumeDir(true, cfg)).toBe(join(base, 'qs-20261130T020000Z'));
    expect(resumeDir(join(base, 'qs-20261130T010000Z'), cfg)).toBe(join(base, 'qs-20261130T010000Z'));
    expect(() => resumeDir(join(base, 'gone'), cfg)).toThrow(
      new UserError(`--resume: run folder not found: ${join(base, 'gone')}`),
    );
    expect(() => resumeDir(true, configSchema.parse({ run: { name: 'none', dir: base } }))).toThrow(
      `--resume: no run named 'none' in ${base}/`,
    );
  });

  it('configFrom applies --set over the defaults', () => {
    const cfg = configFrom({ set: ['train.steps=3', 'run.name=x'] });
    expect(cfg.train.steps).toBe(3);
    expect(cfg.run.name).toBe('x');
  });

  it('--resume refuses a folder that is not a run folder, and picks the highest same-second suffix', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-resume-'));
    mkdirSync(join(base, 'not-a-run'));
    const cfg = configSchema.parse({ run: { name: 'qs', dir: base } });
    expect(() => resumeDir(join(base, 'not-a-run'), cfg)).toThrow(
      new UserError(
        `--resume: ${join(base, 'not-a-run')} is not a run folder (no config.yaml; only folders made by a run can ` +
          `be resumed)`,
      ),
    );
    for (const d of ['qs-20261130T010000Z', 'qs-20261130T010000Z-2', 'qs-20261130T010000Z-10']) {
      mkdirSync(join(base, d));
      writeFileSync(join(base, d, 'config.yaml'), '{}\n');
    }
    expect(resumeDir(true, cfg)).toBe(join(base, 'qs-20261130T010000Z-10'));
  });
});

describe('withRun', () => {
  it(
    'starts the backend SHARP_BACKEND names (over run.backend), the --backend flag over both, and the native ' +
      'kernels on wasm',
    async () => {
      const cfg = configFrom({ set: ['run.backend=wasm', 'run.logLevel=error'] });
      const saved = process.env.SHARP_BACKEND;
      try {
        process.env.SHARP_BACKEND = 'cpu';
        expect((await withRun({ cfg }, async (r) => r.backend)).backend).toBe('cpu');
        const wasm = await withRun({ cfg, backendFlag: 'wasm' }, async (r) => r.backend);
        expect(wasm.backend).toBe('wasm');
        expect(wasm.native).toMatch(process.env.SHARP_NATIVE === '0' ? /^off$/ : /^(native|fallback .+|off .+)$/);
        await expect(withRun({ cfg, backendFlag: 'gpu' }, async () => 1)).rejects.toThrow(
          new UserError("backend must be auto, tensorflow, native, wasm or cpu, got 'gpu'"),
        );
      } finally {
        if (saved === undefined) delete process.env.SHARP_BACKEND;
        else process.env.SHARP_BACKEND = saved;
      }
    },
  );
});
