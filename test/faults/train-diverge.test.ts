import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { expectLoadable, microConfig, onlyRun, sharp } from '../cli-helpers.ts';
import { listCheckpoints } from '../../src/train/checkpoints/checkpoint.ts';

/**
 * An update that blows the weights up: one line naming the step, exit 2, only good checkpoints.
 * Learning rates are bounded (at most 1), so the blow-up comes from a decoupled weight decay far
 * beyond any sane value: each step multiplies every weight by (1 - lr x decay).
 */
const root = mkdtempSync(join(tmpdir(), 'sharp-diverge-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('training that diverges', () => {
  it('stops with one line naming the step and keeps only finite checkpoints', async () => {
    const cfg = microConfig(root, 'nan', 4);
    const r = await sharp(root, [
      'train',
      '--config',
      cfg,
      '--set',
      'train.sft.lr=1',
      '--set',
      'train.weightDecay=1e30',
      '--set',
      'train.gradClip=0',
    ]);
    const lines = r.stderr.trim().split('\n');
    expect(r.code, r.stderr).toBe(2);
    expect(lines.at(-1)).toMatch(
      /^sharp: (train: RL|sft) step \d: (gradient norm is (NaN|Infinity)|weight '.*' became NaN or Inf)/,
    );
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    const run = onlyRun(join(root, 'runs'));
    await expectLoadable(run);
    // loading checks every weight is finite
    for (const c of await listCheckpoints(run)) (await CausalLM.load(c.dir)).dispose();
  }, 600_000);
});
