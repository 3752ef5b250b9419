import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.ts';
import { configSchema } from '../config/schema.ts';
import { createRunDir, runStamp } from './run-dir.ts';

describe('createRunDir', () => {
  it('creates runs/<name>-<stamp>/ holding the resolved config, which parses back to the same config', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-run-'));
    const cfg = loadConfig({ sets: [`run.dir=${base}`, 'run.name=demo', 'train.lr=0.5'] });
    const dir = createRunDir(cfg, new Date('2026-01-02T03:04:05.678Z'));
    expect(dir).toBe(join(base, 'demo-20260102T030405Z'));
    const back = configSchema.parse(parse(readFileSync(join(dir, 'config.yaml'), 'utf8')));
    expect(back).toEqual(cfg);
    expect(existsSync(dir)).toBe(true);
  });

  it('formats stamps without separators', () => {
    expect(runStamp(new Date('2026-11-30T00:00:00.000Z'))).toBe('20261130T000000Z');
  });
});

describe('createRunDir uniqueness', () => {
  it('two runs of one name in the same second get two folders (exclusive create, -2 suffix)', () => {
    const base = mkdtempSync(join(tmpdir(), 'sharp-run-'));
    const cfg = loadConfig({ sets: [`run.dir=${base}`, 'run.name=demo'] });
    const at = new Date('2026-01-02T03:04:05.100Z');
    const a = createRunDir(cfg, at);
    const b = createRunDir(cfg, new Date('2026-01-02T03:04:05.900Z'));
    const c = createRunDir(cfg, at);
    expect([a, b, c]).toEqual([
      join(base, 'demo-20260102T030405Z'),
      join(base, 'demo-20260102T030405Z-2'),
      join(base, 'demo-20260102T030405Z-3'),
    ]);
    for (const d of [a, b, c]) expect(existsSync(join(d, 'config.yaml'))).toBe(true);
  });
});
