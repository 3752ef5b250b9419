import { describe, it, expect } from 'vitest';
import type { Episode } from '../data/episode.ts';
import { allCoalitions, leaveOneOutCoalitions, maskedDelegations, workerCount } from './coalitions.ts';
import { CoalitionCache, evaluateCoalitions, valueOf } from './counterfactual.ts';
import { gameRunner, makeTrajectory } from '../../test/credit-fixtures.ts';
import { emSuccess } from './success.ts';
import { accuracyOutcome } from './outcome.ts';

const episode: Episode = { id: 'ep', question: 'q', answers: ['yes'], paragraphs: [] };

describe('coalitions', () => {
  it('masks the delegations outside S', () => {
    expect(maskedDelegations(0b101, 3)).toEqual([1]);
    expect(maskedDelegations(0, 2)).toEqual([0, 1]);
    expect(leaveOneOutCoalitions(3)).toEqual([0b110, 0b101, 0b011]);
    expect(allCoalitions(2)).toEqual([0, 1, 2, 3]);
  });
  it('rejects trajectories whose delegation numbers have gaps', () => {
    const t = makeTrajectory({
      id: 'bad',
      workers: [
        { subtask: 'a', answer: 'b' },
        { subtask: 'c', answer: 'd' },
      ],
      finalAnswer: 'x',
    });
    t.agents[2] = { ...t.agents[2], delegation: 5 };
    expect(() => workerCount(t)).toThrow(/trajectory bad: worker delegation numbers must be 0\.\.1/);
  });
});

describe('evaluateCoalitions', () => {
  it('one runner call per group, each coalition once, v(N) replayed like the others', async () => {
    const a = makeTrajectory({
      id: 'a',
      workers: [
        { subtask: 's0', answer: 'r' },
        { subtask: 's1', answer: 'r' },
        { subtask: 's2', answer: 'r' },
      ],
      finalAnswer: 'yes',
    });
    const b = makeTrajectory({ id: 'b', workers: [{ subtask: 's0', answer: 'r' }], finalAnswer: 'no' });
    // game: success iff workers 0 and 1 both report
    const runner = gameRunner((s) => (s & 3) === 3);
    const cache = new CoalitionCache();
    const { tables, stats } = await evaluateCoalitions(
      [
        { traj: a, episode, coalitions: [...leaveOneOutCoalitions(3), ...allCoalitions(3)] },
        { traj: b, episode, coalitions: leaveOneOutCoalitions(1) },
      ],
      runner,
      { outcome: accuracyOutcome(emSuccess), replays: 1 },
      cache,
    );
    expect(runner.batches).toHaveLength(1);
    // a: 2^3 = 8 coalitions, N included; b: N and its one LOO coalition {} -> 10 items
    expect(stats).toEqual({ runnerCalls: 1, replayItems: 10, cachedCoalitions: 4 });
    expect(valueOf(tables[0], 0b111)).toBe(1);
    expect(valueOf(tables[0], 0b011)).toBe(1);
    expect(valueOf(tables[0], 0b101)).toBe(0);
    // b recorded 'no', and its one worker alone does not satisfy the game: v(N) = 0, no noise
    expect(valueOf(tables[1], 1)).toBe(0);
    expect(tables[1].recorded).toBe(0);
    expect(tables[1].noise).toBe(0);
    expect(tables[0].noise).toBe(0);
    // a second request for the same coalitions replays nothing
    const again = await evaluateCoalitions(
      [{ traj: a, episode, coalitions: allCoalitions(3) }],
      runner,
      { outcome: accuracyOutcome(emSuccess), replays: 1 },
      cache,
    );
    expect(again.stats.runnerCalls).toBe(0);
    expect(runner.batches).toHaveLength(1);
  });
  it('averages n replays per coalition', async () => {
    const a = makeTrajectory({
      id: 'a',
      workers: [
        { subtask: 's0', answer: 'r' },
        { subtask: 's1', answer: 'r' },
      ],
      finalAnswer: 'yes',
    });
    // replay r of a coalition succeeds on r = 0 and 2 of 4 when worker 0 reports: v = 0.5
    const runner = gameRunner((s, _k, r) => (s & 1) === 1 && r % 2 === 0);
    const { tables, stats } = await evaluateCoalitions(
      [{ traj: a, episode, coalitions: [0b01, 0b10] }],
      runner,
      { outcome: accuracyOutcome(emSuccess), replays: 4 },
      new CoalitionCache(),
    );
    expect(stats.replayItems).toBe(12); // (N + 2 coalitions) x 4
    expect(valueOf(tables[0], 0b01)).toBe(0.5);
    expect(valueOf(tables[0], 0b10)).toBe(0);
    expect(valueOf(tables[0], 0b11)).toBe(0.5);
    expect(tables[0].noise).toBe(0.5); // recorded 'yes'; 2 of N's 4 replays say no
    // replay r of every coalition carries replica r (its sampling stream)
    expect(runner.batches[0].map((it) => it.replica)).toEqual([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
    expect(() => valueOf(tables[0], 0)).toThrow(/coalition 0 .* was not evaluated/);
  });
  it('clear errors for bad coalitions, replay counts and runner output', async () => {
    const a = makeTrajectory({ id: 'a', workers: [{ subtask: 's0', answer: 'r' }], finalAnswer: 'yes' });
    await expect(
      evaluateCoalitions(
        [{ traj: a, episode, coalitions: [4] }],
        gameRunner(() => true),
        { outcome: accuracyOutcome(emSuccess), replays: 1 },
      ),
    ).rejects.toThrow(/coalition 4 is not a subset of its 1 workers/);
    await expect(
      evaluateCoalitions(
        [{ traj: a, episode, coalitions: [0] }],
        gameRunner(() => true),
        { outcome: accuracyOutcome(emSuccess), replays: 0 },
      ),
    ).rejects.toThrow(/credit.replays/);
    await expect(
      evaluateCoalitions([{ traj: a, episode, coalitions: [0] }], () => Promise.resolve([]), {
        outcome: accuracyOutcome(emSuccess),
        replays: 1,
      }),
    ).rejects.toThrow(/returned 0 trajectories for 2 items/);
  });
  it('a trajectory without workers is not replayed: v(empty) = v(N) is its recorded outcome', async () => {
    const lone = makeTrajectory({ id: 'lone', workers: [], finalAnswer: 'yes' });
    const runner = gameRunner(() => false);
    const { tables, stats } = await evaluateCoalitions([{ traj: lone, episode, coalitions: [] }], runner, {
      outcome: accuracyOutcome(emSuccess),
      replays: 2,
    });
    expect(stats.replayItems).toBe(0);
    expect(valueOf(tables[0], 0)).toBe(1);
  });
});
