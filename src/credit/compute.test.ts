import { describe, it, expect } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { getProtocol } from '../rollout/protocol/index.ts';
import { computeCredits } from './compute.ts';
import { gameRunner, makeTrajectory } from '../../test/credit-fixtures.ts';
import { createJudge } from './judges/index.ts';

const episode: Episode = {
  id: 'ep',
  question: 'Where was the founder of Acme born?',
  answers: ['yes'],
  paragraphs: [],
  decomposition: [
    { id: 1, question: 'Who founded Acme?', answer: 'Ada Byron', paragraphSupportIdx: 0 },
    { id: 2, question: 'Where was #1 born?', answer: 'yes', paragraphSupportIdx: 1 },
  ],
};
const w = (subtask: string, answer: string) => ({ subtask, answer });

describe('computeCredits (bookkeeping over a known game)', () => {
  // a: workers 0, 1 needed, 2 irrelevant -> success iff {0,1} report; b: one worker, fails anyway.
  const a = makeTrajectory({
    id: 'a',
    workers: [
      w('Who founded Acme?', 'Ada Byron'),
      w('Where was Ada Byron born?', 'yes'),
      w('What is the capital of Peru?', 'Lima'),
    ],
    finalAnswer: 'yes',
  });
  const b = makeTrajectory({ id: 'b', workers: [w('Who founded Acme?', 'Bob')], finalAnswer: 'no' });
  const game = (s: number, _k: number, _r: number, id: string): boolean => id === 'a' && (s & 3) === 3;

  it('loo: deltas, planner credit, totals, report; one batched replay', async () => {
    const runner = gameRunner(game);
    const cfg = creditSection.parse({ method: 'loo', replays: 1, weights: { broadcast: 1, marginal: 0.9, tool: 0.1 } });
    const r = await computeCredits([a, b], episode, runner, cfg);
    expect(runner.batches).toHaveLength(1);
    expect(r.stats.replayItems).toBe(6); // N and 3 LOO coalitions for a, N and 1 for b
    expect(r.trajectories[0].deltas).toEqual([1, 1, 0]);
    expect(r.trajectories[0].plannerMarginal).toBeCloseTo(2 / 3, 15);
    expect(r.trajectories[1].deltas).toEqual([0]);
    // planner of a: 1 + 0.9 * 2/3 + 0.1 * 1 (3 valid delegations) = 1.7
    expect(r.credits[0].total).toBeCloseTo(1.7, 12);
    // worker 0 of a: 1 + 0.9 * 1 + 0.1 * 1 = 2.0; irrelevant worker: 1 + 0 + 0.1 = 1.1
    expect(r.credits[1].total).toBeCloseTo(2, 12);
    expect(r.credits[3].total).toBeCloseTo(1.1, 12);
    expect(r.credits.map((c) => c.trajectoryId)).toEqual(['a', 'a', 'a', 'a', 'b', 'b']);
    // report: deltas 1, 1, 0, 0 -> helpful 1/2, neutral 1/2
    expect(r.report).toMatchObject({
      workerCalls: 4,
      helpful: 0.5,
      neutral: 0.5,
      harmful: 0,
      maxEfficiencyResidual: null,
      noiseFloor: 0,
      nonzeroInSuccess: 2 / 3,
      nonzeroInFailure: 0,
    });
  });
  it('shapley exact: needed pair splits v(N) - v(empty), dummy 0, efficiency residual ~0', async () => {
    const cfg = creditSection.parse({ method: 'shapley', replays: 1 });
    const r = await computeCredits([a], episode, gameRunner(game), cfg);
    expect(r.stats.replayItems).toBe(8); // 2^3, N included
    expect(r.trajectories[0].phi).toEqual([0.5, 0.5, 0]);
    expect(r.trajectories[0].workerMarginal).toEqual([0.5, 0.5, 0]);
    expect(r.trajectories[0].plannerMarginal).toBeCloseTo(1 / 3, 15);
    expect(r.report.maxEfficiencyResidual).toBeLessThan(1e-12);
  });
  it('shapley sampled beyond the exact limit is seeded and efficient', async () => {
    const cfg = creditSection.parse({ method: 'shapley', shapleyExactMaxWorkers: 2, shapleyPermutations: 16 });
    const r1 = await computeCredits([a], episode, gameRunner(game), cfg);
    const r2 = await computeCredits([a], episode, gameRunner(game), cfg);
    expect(r1.trajectories[0].phi).toEqual(r2.trajectories[0].phi);
    // AND game of players 0 and 1: every ordering gives the pair's marginal to whichever of 0, 1 comes later.
    const phi = r1.trajectories[0].phi ?? [];
    expect(phi[0] + phi[1]).toBeCloseTo(1, 12);
    expect(phi[2]).toBe(0);
    expect(r1.report.maxEfficiencyResidual).toBeLessThan(1e-12);
    await expect(
      computeCredits([a], episode, gameRunner(game), creditSection.parse({ method: 'shapley', shapleyMode: 'exact' })),
    ).resolves.toBeDefined();
  });
  it('broadcast: every agent of a trajectory gets the same reward, the recorded accuracy; no replays', async () => {
    const runner = gameRunner(game);
    const r = await computeCredits([a, b], episode, runner, creditSection.parse({ method: 'broadcast' }));
    expect(runner.batches).toHaveLength(0);
    expect(r.credits.map((c) => c.total)).toEqual([1, 1, 1, 1, 0, 0]);
    expect(r.credits.every((c) => c.parts.marginal === 0 && c.parts.tool === 0)).toBe(true);
  });
  it('matpo: 1.0 accuracy + 0.1 trajectory format validity, broadcast; no replays', async () => {
    const runner = gameRunner(game);
    const bad = makeTrajectory({
      id: 'c',
      workers: [{ subtask: 'Who founded Acme?', answer: 'Bob', calls: [false, true] }],
      finalAnswer: 'no',
    });
    const r = await computeCredits([a, bad], episode, runner, creditSection.parse({ method: 'matpo' }));
    expect(runner.batches).toHaveLength(0);
    // a: 6 valid calls of 6 -> 1 + 0.1; c: 2 valid of 3 (delegate, failed search, search) -> 0 + 0.1 * 2/3
    expect(r.credits.map((x) => x.total)).toEqual(
      [1.1, 1.1, 1.1, 1.1, 0.2 / 3, 0.2 / 3].map((v) => expect.closeTo(v, 12)),
    );
  });
  it('message level and failure pairs through the rule judge', async () => {
    const judge = createJudge({ judge: 'rule', hopMatchF1: 0.5, judgeMargin: 0 }, { protocol: getProtocol('tags') });
    const cfg = creditSection.parse({ method: 'loo', messageLevel: true, failurePairs: true });
    const r = await computeCredits([a, b], episode, gameRunner(game), cfg, {
      judge,
      contextOf: (ctx, i) =>
        ctx.traj.messages
          .filter((m) => m.agent === ctx.traj.messages[i].agent && m.index < i)
          .map((m) => ({ role: m.chatRole, content: m.text })),
      resample: (reqs) => Promise.resolve(reqs.map(() => '<answer>Ada Byron</answer>')),
    });
    // b failed: worker 0 reported 'Bob' for hop 1 -> first error = its report; pair chosen = Ada Byron
    const bReport = b.messages.filter((m) => m.agent === 1 && m.chatRole === 'assistant').at(-1)?.index;
    expect(r.trajectories[1].firstError?.index).toBe(bReport);
    expect(r.pairs).toHaveLength(1);
    expect(r.pairs[0]).toMatchObject({ chosen: '<answer>Ada Byron</answer>', rejected: '<answer>Bob</answer>' });
    // shares conserve each agent's total
    for (const c of r.credits) {
      const sum = r.messageRewards
        .filter((m) => m.trajectoryId === c.trajectoryId && m.agent === c.agent)
        .reduce((s, m) => s + m.reward, 0);
      expect(sum).toBeCloseTo(c.total, 9);
    }
    await expect(computeCredits([a], episode, gameRunner(game), cfg)).rejects.toThrow(/need a judge/);
  });
  it('rejects trajectories of another episode', async () => {
    await expect(
      computeCredits([{ ...a, episodeId: 'other' }], episode, gameRunner(game), creditSection.parse({})),
    ).rejects.toThrow(/trajectory a is for episode other, not ep/);
  });
});
