import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { microConfig, sharp } from '../../test/cli-helpers.ts';

/**
 * `sharp train` chooses the collect from rollout.distributed: the distributed units in the trainer
 * (local) run a whole micro run, and a Redis URL that cannot be served is one line and exit 2.
 */
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sharp-dist-pipe-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sharp train with rollout.distributed', () => {
  it('local: the run completes with the distributed units and their step seeds', async () => {
    const r = await sharp(root, ['train', '--config', microConfig(root, 'loc', 2), '--set', 'rollout.distributed.local=true']);
    expect(r.code, r.stderr).toBe(0);
    const run = join(root, 'runs', readdirSync(join(root, 'runs')).find((d) => d.startsWith('loc-')) as string);
    const metrics = readFileSync(join(run, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, number>);
    expect(metrics.map((m) => [m.step, m['rollout/trajectories']])).toEqual([
      [1, 4],
      [2, 4],
    ]);
  }, 180_000);

  it('a Redis URL is refused with one line when it cannot be served', async () => {
    // Refused with the config, before any SFT or model work (a few seconds, not a whole stage).
    const bad = await sharp(root, ['train', '--config', microConfig(root, 'url', 1), '--set', 'rollout.distributed.redis=http://x']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual(["sharp: config: rollout.distributed.redis: not a Redis URL: 'http://x' (expected redis://host:port)"]);
    expect(readdirSync(root).filter((n) => n.startsWith('url-'))).toEqual([]); // no transcripts or model were made
    const judge = await sharp(root, ['train', '--config', microConfig(root, 'judge', 1), '--set', 'rollout.distributed.local=true', '--set', 'credit.messageLevel=true']);
    expect(judge.code).toBe(2);
    expect(judge.stderr.trim().split('\n')).toHaveLength(1);
    expect(judge.stderr).toMatch(/^sharp: .*rollout\.distributed: credit\.messageLevel and credit\.failurePairs need a judge/);
  }, 180_000);
});
