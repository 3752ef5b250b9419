import { afterAll, describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { configSchema } from '../../config/schema.ts';
import { generateSynth } from '../../data/synth/generate.ts';
import { writeJsonlAtomic } from '../../fs/atomic.ts';
import { expertPolicy, hopSteps } from '../../rollout/scripted/expert.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { scoreMusique } from '../musique-score.ts';
import { finishEvalSession, openEvalSession } from '../session.ts';
import { runEvalLoop } from './runner.ts';

const repo = resolve(import.meta.dirname, '../../..');
afterAll(async () => {
  await closeCodeSandbox();
});

function python(pred: string, gold: string): Record<string, number> | null {
  try {
    return JSON.parse(
      execFileSync('python3', [join(repo, 'test/reference/musique_reference.py'), pred, gold], { encoding: 'utf8' }),
    ) as Record<string, number>;
  } catch {
    return null; // no python3 here: the TypeScript port still checks the files
  }
}

describe('runEvalLoop', () => {
  it('batches episodes into engine runs, records each, and scores mixed answers as the official evaluator', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-eval-loop-'));
    const data = join(dir, 'synth.jsonl');
    writeJsonlAtomic(data, generateSynth({ seed: 5, n: 12, minHops: 2, maxHops: 3 }));
    const session = openEvalSession({ bench: 'musique', data, out: join(dir, 'out'), repoRoot: repo });
    // A saboteur answers the last hop of every third episode wrongly: EM must be exactly 8/12.
    let k = 0;
    const sabotaged = new Map(session.episodes.map((ep) => [ep.id, k++ % 3 === 0]));
    const policy = expertPolicy({
      steps: (ep) =>
        hopSteps(ep).map((s, i, all) =>
          sabotaged.get(ep.id) && i === all.length - 1 && s.kind === 'hop' ? { ...s, sabotage: 'Nowhere Land' } : s,
        ),
    });
    const stats = await runEvalLoop({
      session,
      policy,
      engine: { cfg: configSchema.parse({}).rollout, agents: 'multi' },
      batchEpisodes: 5,
    });
    expect(stats.ran).toBe(12);
    // Batches of 5, 5, 2 episodes: the largest decoding call holds 5 agents, never more.
    expect(stats.maxBatch).toBe(5);
    expect(policy.batches.every((b) => b <= 5)).toBe(true);
    expect(session.pending()).toEqual([]);
    const { report, files } = finishEvalSession(session);
    expect(report.metrics.answer_em).toBeCloseTo(8 / 12, 3);
    expect(report.metrics.answer_em).toBe(0.667);
    expect(scoreMusique(files.gold ?? '', files.predictions)).toEqual(report.metrics);
    const ref = python(files.predictions, files.gold ?? '');
    if (ref) expect(ref).toEqual(report.metrics);
  }, 60_000);

  it('rejects a batch size that is not a positive integer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-eval-loop-'));
    const session = openEvalSession({ bench: 'musique', limit: 1, out: dir, repoRoot: repo });
    await expect(
      runEvalLoop({
        session,
        policy: expertPolicy(),
        engine: { cfg: configSchema.parse({}).rollout },
        batchEpisodes: 0,
      }),
    ).rejects.toThrow('eval: batchEpisodes must be a positive integer (got 0)');
  });
});
