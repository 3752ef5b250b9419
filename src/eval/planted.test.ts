import { afterAll, describe, expect, it } from 'vitest';
import type { Episode } from '../data/episode.ts';
import { generateSynth } from '../data/synth/generate.ts';
import { substituteRefs } from '../data/synth/reader.ts';
import { plantedOf, toEpisode } from '../data/synth/record.ts';
import { rollout } from '../rollout/engine.ts';
import { expertPolicy, NO_FAILURES } from '../rollout/scripted/expert.ts';
import type { AgentRecord, Trajectory } from '../rollout/types.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { comparisonEpisode, plantedClaim } from '../../test/planted-fixtures.ts';
import { rolloutConfig } from '../../test/rollout-fixtures.ts';
import { plantedByEpisode, plantedReports } from './planted.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

const claim = plantedClaim;
const episode = comparisonEpisode;
const worker = (id: number, answer: string | null): AgentRecord => ({
  id,
  role: 'worker',
  delegation: id - 1,
  answer,
  endReason: answer === null ? 'max_turns' : 'answer',
});
const trajectory = (episodeId: string, reports: (string | null)[]): Trajectory => ({
  id: `${episodeId}#0`,
  episodeId,
  sample: 0,
  messages: [],
  agents: [
    { id: 0, role: 'planner', delegation: null, answer: 'x', endReason: 'answer' },
    ...reports.map((r, i) => worker(i + 1, r)),
  ],
  finalAnswer: 'x',
});

describe('plantedReports', () => {
  it('counts worker reports equal to the planted wrong value over all worker calls (hand-computed)', () => {
    const eps = [episode('a', claim('1967', '1950')), episode('b')];
    // a: one report repeats the claim (normalised: punctuation and spaces), one is right, one never answered;
    // b: no claim, so its '1967' is no planted report, but its call counts.
    const trajs = [trajectory('a', [' 1967.', '1962', null]), trajectory('b', ['1967'])];
    expect(plantedReports(trajs, eps)).toEqual({ calls: 4, planted: 1, share: 0.25 });
    // A second sample of a repeats it twice: 3 of 7 calls.
    expect(plantedReports([...trajs, trajectory('a', ['1967', '1962', '1967'])], eps)).toEqual({
      calls: 7,
      planted: 3,
      share: 3 / 7,
    });
    expect(plantedReports([], eps)).toEqual({ calls: 0, planted: 0, share: null });
  });

  it('per episode: the same counts split by question, every episode listed', () => {
    const eps = [episode('a', claim('1967', '1950')), episode('b'), episode('c')];
    const trajs = [trajectory('a', ['1967', '1962']), trajectory('b', ['1967']), trajectory('a', ['1967', null])];
    expect([...plantedByEpisode(trajs, eps)]).toEqual([
      ['a', { calls: 4, planted: 2 }],
      ['b', { calls: 1, planted: 0 }],
      ['c', { calls: 0, planted: 0 }],
    ]);
  });

  it('never counts a wrong value that is also a gold hop answer', () => {
    const eps = [episode('a', claim('1962', '1950'))];
    expect(plantedReports([trajectory('a', ['1962', '1962'])], eps)).toEqual({ calls: 2, planted: 0, share: 0 });
  });

  it('names a trajectory whose episode is missing', () => {
    expect(() => plantedReports([trajectory('zz', ['1'])], [episode('a')])).toThrow(
      'plantedReports: trajectory zz#0 is of episode zz, which is not among the episodes',
    );
  });

  it('through the engine: every trusting worker shown the claim, and no careful one', async () => {
    const eps = generateSynth({ seed: 8, n: 150, shapes: { comparison: 1, aggregation: 1 }, misleadingRate: 1 }).map(
      toEpisode,
    );
    const cfg = rolloutConfig({ maxDelegations: 6, maxPlannerTurns: 8, maxParallelDelegations: 3 });
    const trusting = (
      await rollout(expertPolicy({ failures: { ...NO_FAILURES, trustPlanted: 1 } }), eps, { cfg, groupSize: 1 })
    ).trajectories;
    // Independently: workers asked the planted hop (gold references filled) whose searches showed the planted
    // paragraph.
    let shown = 0;
    trusting.forEach((t, i) => {
      const ep = eps[i] as Episode;
      const c = plantedOf(ep);
      if (!c) throw new Error('every episode has a claim');
      const asked = substituteRefs(
        ep.decomposition?.[c.hop]?.question ?? '',
        (ep.decomposition ?? []).map((h) => h.answer),
      );
      for (const w of t.agents) {
        if (w.role !== 'worker' || w.subtask !== asked) continue;
        if (
          t.messages.some(
            (m) => m.agent === w.id && m.toolCalls.some((call) => call.retrievedIdx?.includes(c.paragraphIdx)),
          )
        )
          shown++;
      }
    });
    const calls = trusting.reduce((n, t) => n + t.agents.filter((a) => a.role === 'worker').length, 0);
    expect(shown).toBeGreaterThan(75);
    expect(plantedReports(trusting, eps)).toEqual({ calls, planted: shown, share: shown / calls });
    const careful = (await rollout(expertPolicy(), eps, { cfg, groupSize: 1 })).trajectories;
    expect(plantedReports(careful, eps).planted).toBe(0);
  });
});
