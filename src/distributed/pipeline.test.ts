import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listStepRecords, readStepRecord } from '../credit/record.ts';
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
    const r = await sharp(root, [
      'train',
      '--config',
      microConfig(root, 'loc', 2),
      '--set',
      'rollout.distributed.local=true',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const run = join(root, 'runs', readdirSync(join(root, 'runs')).find((d) => d.startsWith('loc-')) as string);
    const metrics = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(metrics.map((m) => [m.step, m['rollout/trajectories']])).toEqual([
      [1, 4],
      [2, 4],
    ]);
    // The metrics and viewer records of the in-process collect: the tool-call rate, and per step both
    // groups (credit.recordGroups = 2) with each replayed answer behind v(S) (credit.replays = 1).
    for (const m of metrics) expect(m['rollout/invalid_calls']).toBeGreaterThanOrEqual(0);
    const files = listStepRecords(run);
    expect(files.map((f) => f.replace(/^.*\//, '').replace(/\.gz$/, ''))).toEqual([
      'step-000001.json',
      'step-000002.json',
    ]);
    for (const [i, f] of files.entries()) {
      const rec = readStepRecord(f);
      expect([rec.kind, rec.step, rec.groupsTotal, rec.groups.length, rec.credit.method]).toEqual([
        'train',
        i + 1,
        2,
        2,
        'loo',
      ]);
      for (const t of rec.groups.flatMap((g) => g.trajectories)) {
        expect(t.coalitions).toHaveLength(t.k + 1); // LOO: the full coalition and one per worker left out
        for (const c of t.coalitions) expect(c.answers).toHaveLength(1);
      }
    }
  }, 180_000);

  it('a Redis URL is refused with one line when it cannot be served', async () => {
    // Refused with the config, before any SFT or model work (a few seconds, not a whole stage).
    const bad = await sharp(root, [
      'train',
      '--config',
      microConfig(root, 'url', 1),
      '--set',
      'rollout.distributed.redis=http://x',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([
      "sharp: config: rollout.distributed.redis: not a Redis URL: 'http://x' (expected redis://host:port)",
    ]);
    expect(readdirSync(root).filter((n) => n.startsWith('url-'))).toEqual([]); // no transcripts or model were made
    const judge = await sharp(root, [
      'train',
      '--config',
      microConfig(root, 'judge', 1),
      '--set',
      'rollout.distributed.local=true',
      '--set',
      'credit.messageLevel=true',
    ]);
    expect(judge.code).toBe(2);
    expect(judge.stderr.trim().split('\n')).toHaveLength(1);
    expect(judge.stderr).toMatch(
      /^sharp: .*rollout\.distributed: credit\.messageLevel and credit\.failurePairs need a judge/,
    );
  }, 180_000);
});
