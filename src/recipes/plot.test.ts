import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './plot.ts';
import { UserError } from '../errors.ts';
import { JsonlMetrics } from '../train/metrics/jsonl.ts';

describe('sharp plot', () => {
  it('writes PNGs into --out and maps bad input to UserError', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plotcmd-'));
    try {
      new JsonlMetrics(join(dir, 'metrics.jsonl')).write(1, { 'reward/planner': 0.5 });
      await run({ runDir: dir, out: join(dir, 'png') });
      expect(existsSync(join(dir, 'png', 'reward.png'))).toBe(true);
      await expect(run({ runDir: join(dir, 'nope') })).rejects.toBeInstanceOf(UserError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
