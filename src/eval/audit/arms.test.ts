import { describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import type { Episode } from '../../data/episode.ts';
import { gameRunner, makeTrajectory } from '../../../test/credit-fixtures.ts';
import { comparisonEpisode } from '../../../test/planted-fixtures.ts';
import { successFunction } from '../../credit/success.ts';
import { AUDIT_ARMS, armConfig, armCredit } from './arms.ts';
import { labelWorkerCalls } from './labels.ts';

const base = configSchema.parse({}).credit;
const episodeOf = (id: string): Episode => ({ ...comparisonEpisode(id), answers: ['yes'] });
const ada = 'In what year was Ada Brin born?';
const bo = 'In what year was Bo Cade born?';
// a: worker 0 right (1950), worker 1 wrong (1967); the team wins iff worker 0 reports.
// b: one wrong worker; the team never wins, though the recorded answer was right (noise 1).
// d: one right worker; the team wins iff it reports.
const trajs = [
  makeTrajectory({
    id: 'a/0',
    episodeId: 'a',
    workers: [
      { subtask: ada, answer: '1950' },
      { subtask: bo, answer: '1967' },
    ],
    finalAnswer: 'yes',
  }),
  makeTrajectory({ id: 'b/0', episodeId: 'b', workers: [{ subtask: bo, answer: '1900' }], finalAnswer: 'yes' }),
  makeTrajectory({ id: 'd/0', episodeId: 'd', workers: [{ subtask: bo, answer: '1962' }], finalAnswer: 'yes' }),
];
const episodes = ['a', 'b', 'd'].map(episodeOf);
const calls = trajs.flatMap((t, i) =>
  labelWorkerCalls(t, episodes[i] as Episode, i, {
    hopMatchF1: base.hopMatchF1,
    match: successFunction('em', { f1Threshold: 0.5 }),
  }),
);
const game = (reporting: number, _k: number, _r: number, id: string): boolean => id !== 'b/0' && (reporting & 1) === 1;

describe('audit arms', () => {
  it('LOO under every counterfactual of the config, then the oracle ceiling', () => {
    expect(AUDIT_ARMS.map((a) => [a.name, a.method, a.counterfactual, a.value ?? 'outcome', a.ceiling])).toEqual([
      ['mask', 'loo', 'mask', 'outcome', false],
      ['resample', 'loo', 'resample', 'outcome', false],
      ['repair', 'loo', 'repair', 'outcome', false],
      ['likelihood', 'loo', 'mask', 'likelihood', false],
      ['likelihood-shapley', 'shapley', 'mask', 'likelihood', false],
      ['likelihood-seq', 'loo', 'mask', 'likelihood', false],
      ['oracle', 'oracle', 'mask', 'outcome', true],
    ]);
    const seq = armConfig(base, AUDIT_ARMS[5]!);
    expect([seq.value, seq.likelihood.form, seq.method]).toEqual(['likelihood', 'sequential', 'loo']);
    const cfg = armConfig(
      { ...base, method: 'shapley', messageLevel: true, failurePairs: true, replays: 3 },
      AUDIT_ARMS[2]!,
    );
    expect([cfg.method, cfg.counterfactual, cfg.messageLevel, cfg.failurePairs, cfg.replays]).toEqual([
      'loo',
      'repair',
      false,
      false,
      3,
    ]);
  });
});

describe('armCredit', () => {
  it('LOO Deltas of each labelled call, noise floor, replays; two trajectories per runner batch (hand-computed)', async () => {
    const runner = gameRunner(game);
    const seen: number[] = [];
    const r = await armCredit(trajs, episodes, calls, armConfig(base, AUDIT_ARMS[0]!), runner, 2, (n) => seen.push(n));
    // a: v(N) = 1, v(N \ 0) = 0, v(N \ 1) = 1 -> Deltas 1, 0. b: 0 - 0. d: v(N) = 1, v(empty) = 0 -> 1.
    expect(calls.map((c) => `${c.trajectoryId}:${c.delegation}`)).toEqual(['a/0:0', 'a/0:1', 'b/0:0', 'd/0:0']);
    expect(r.credits).toEqual([1, 0, 0, 1]);
    // Only b's v(N) replays miss its recorded outcome: mean noise 1/3.
    expect(r.noise).toBeCloseTo(1 / 3, 12);
    // (full + one per worker) coalitions x 2 replays: a 3 x 2, b 2 x 2, d 2 x 2.
    expect(r.replays).toBe(14);
    expect(runner.batches.map((b) => [...new Set(b.map((it) => it.traj.id))])).toEqual([['a/0', 'b/0'], ['d/0']]);
    expect(seen).toEqual([2, 1]);
  });

  it('the oracle: 1 for a right report, 0 for a wrong one, nothing replayed', async () => {
    const runner = gameRunner(game);
    const r = await armCredit(trajs, episodes, calls, armConfig(base, AUDIT_ARMS[6]!), runner, 16);
    expect(r.credits).toEqual([1, 0, 0, 1]);
    expect([r.noise, r.replays, runner.batches.length]).toEqual([0, 0, 0]);
  });

  it('refuses episodes that do not pair with the trajectories', async () => {
    await expect(armCredit(trajs, episodes.slice(1), calls, base, gameRunner(game), 2)).rejects.toThrow(
      'audit: 2 episodes for 3 trajectories',
    );
  });
});
