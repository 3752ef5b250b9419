import { afterAll, describe, expect, it } from 'vitest';
import { generateSynth } from '../../data/synth/generate.ts';
import { toEpisode } from '../../data/synth/record.ts';
import { closeCodeSandbox } from '../../tools/code.ts';
import { rollout } from '../engine.ts';
import { replay } from '../replay.ts';
import { rolloutConfig } from '../../../test/rollout-fixtures.ts';
import type { Trajectory } from '../types.ts';
import { DEFAULT_IRRELEVANT_SUBTASK, EXPERT_UNKNOWN, expertPolicy, insertStep } from './expert.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

const episodes = generateSynth({ seed: 7, n: 200 }).map(toEpisode);

describe('scripted expert', () => {
  for (const protocol of ['tags', 'json'] as const) {
    it(`solves 200/200 synthetic episodes through the real engine and tools (${protocol})`, async () => {
      const cfg = rolloutConfig({ protocol });
      const policy = expertPolicy();
      const { trajectories, stats } = await rollout(policy, episodes, { cfg, groupSize: 1 });
      const wrong = trajectories.filter((t, i) => t.finalAnswer !== episodes[i]?.answers[0]);
      expect(wrong.map((t) => `${t.episodeId}: ${t.finalAnswer}`)).toEqual([]);
      // every worker answered its hop with the gold sub-answer, and every call was valid
      for (const [i, t] of trajectories.entries()) {
        const gold = episodes[i]?.decomposition?.map((h) => h.answer);
        expect(t.agents.filter((a) => a.role === 'worker').map((a) => a.answer)).toEqual(gold);
        expect(t.messages.flatMap((m) => m.toolCalls).every((c) => c.valid)).toBe(true);
      }
      // hops of different kinds decode together: 200 planners, then 200 workers, ...
      expect(stats.maxBatch).toBe(200);
      const hops = episodes.map((e) => e.decomposition?.length ?? 0);
      expect(Math.min(...hops)).toBe(2);
      expect(Math.max(...hops)).toBe(4);
      expect(episodes.some((e) => e.meta?.['arithmetic'] === true)).toBe(true);
    });
  }

  it('configurable planner: irrelevant delegation, repeated hop, saboteur, trust first/latest', async () => {
    const cfg = rolloutConfig({ maxDelegations: 6, maxPlannerTurns: 8 });
    const ep = episodes.find((e) => e.decomposition?.length === 2 && e.meta?.['arithmetic'] !== true);
    if (!ep) throw new Error('no plain 2-hop episode in the sample');
    const run = async (p: ReturnType<typeof expertPolicy>) =>
      (await rollout(p, [ep], { cfg, groupSize: 1 })).trajectories[0] as Trajectory;
    const gold = ep.answers[0];

    const irrelevant = await run(expertPolicy({ steps: insertStep(1, { kind: 'irrelevant' }) }));
    expect(irrelevant.agents.map((a) => a.subtask ?? null)).toEqual([
      null,
      expect.any(String),
      DEFAULT_IRRELEVANT_SUBTASK,
      expect.any(String),
    ]);
    expect(irrelevant.agents[2]?.answer).toBe(EXPERT_UNKNOWN);
    expect(irrelevant.finalAnswer).toBe(gold);

    const twice = await run(expertPolicy({ steps: insertStep(1, { kind: 'hop', hop: 0 }) }));
    expect(twice.agents[1]?.subtask).toBe(twice.agents[2]?.subtask);
    expect(twice.finalAnswer).toBe(gold);

    // A saboteur answers hop 0 wrongly after a correct worker: trusting the latest report fails.
    const sabotage = insertStep(1, { kind: 'hop', hop: 0, sabotage: 'Nobody Atall' });
    const latest = await run(expertPolicy({ steps: sabotage }));
    expect(latest.agents[2]?.answer).toBe('Nobody Atall');
    expect(latest.agents[3]?.subtask).toContain('Nobody Atall');
    expect(latest.finalAnswer).not.toBe(gold);
    const first = await run(expertPolicy({ steps: sabotage, trust: 'first' }));
    expect(first.finalAnswer).toBe(gold);

    // Through the replay API (replan, saboteur masked): the planner re-delegates hop 1 with the
    // placeholder in its subtask; that subtask is not the recorded one, so a worker runs on it.
    const [masked] = await replay(expertPolicy({ steps: sabotage }), [{ traj: latest, episode: ep, masked: [1] }], {
      cfg,
      mode: 'replan',
      placeholder: '[no report]',
    });
    const calls = masked?.messages.filter((m) => m.agent === 0).flatMap((m) => m.toolCalls) ?? [];
    expect(calls[2]?.args).toContain('[no report]');
    expect(calls.map((c) => c.masked ?? false)).toEqual([false, true, false]);
    const rerun = masked?.agents.find((a) => a.delegation === 2);
    expect(rerun?.subtask).toBe(calls[2]?.args);
    expect(calls[2]?.result).toBe(rerun?.answer);
    // Masking the first (correct) worker instead, under trust-first: the planner trusts the first
    // hop-0 report, now the placeholder, so its hop-1 subtask names nobody; a worker runs on it and
    // cannot answer.
    const [lost] = await replay(
      expertPolicy({ steps: sabotage, trust: 'first' }),
      [{ traj: first, episode: ep, masked: [0] }],
      { cfg, mode: 'replan', placeholder: '[no report]' },
    );
    const lostCalls = lost?.messages.filter((m) => m.agent === 0).flatMap((m) => m.toolCalls) ?? [];
    expect(lostCalls.map((c) => c.result)).toEqual(['[no report]', 'Nobody Atall', 'unknown']);
    expect(lostCalls[2]?.args).toContain('[no report]');
    expect(lost?.finalAnswer).not.toBe(gold);
  });
});
