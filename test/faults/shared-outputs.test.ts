import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { microConfig, sharp } from '../cli-helpers.ts';

/**
 * Two fresh runs started together with one name and one model.path: each gets its own run folder
 * (same-second stamps included) and both use the one complete model that won the race.
 */
const root = mkdtempSync(join(tmpdir(), 'sharp-race-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('concurrent runs', () => {
  it('two runs of one config at once: two run folders, one model, both succeed', async () => {
    const cfg = microConfig(root, 'race', 1);
    const [a, b] = await Promise.all([
      sharp(root, ['train', '--config', cfg]),
      sharp(root, ['train', '--config', cfg]),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const runs = readdirSync(join(root, 'runs')).sort();
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatch(/^race-\d{8}T\d{6}Z$/);
    expect(runs[1]).toMatch(/^race-\d{8}T\d{6}Z(-2)?$/);
    expect(existsSync(join(root, 'race-model', 'config.json'))).toBe(true);
    // No temp folder of the losing writer is left beside the model.
    expect(readdirSync(root).filter((n) => n.includes('.tmp-'))).toEqual([]);
  }, 600_000);
});
