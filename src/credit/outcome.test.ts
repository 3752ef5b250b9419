import { describe, expect, it } from 'vitest';
import { creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { UserError } from '../errors.ts';
import type { Trajectory } from '../rollout/types.ts';
import { groupAdvantages, groupRewards } from '../train/grpo/advantages.ts';
import { creditAndRecord, gameRunner, makeTrajectory } from '../../test/credit-fixtures.ts';
import { computeCredits } from './compute.ts';
import type { ReplayRunner } from './counterfactual.ts';
import { accuracyOutcome, answerAccuracy, outcomeFunction } from './outcome.ts';
import { emSuccess } from './success.ts';
import { combinedOutcome, defineReward, namedRewards, type RewardSpec } from './user-reward.ts';

const episode: Episode = {
  id: 'ep',
  question: 'Where was the founder of Acme born?',
  answers: ['Ada Byron'],
  paragraphs: [],
  decomposition: [
    { id: 1, question: 'Who founded Acme?', answer: 'Ada Byron', paragraphSupportIdx: 0 },
    { id: 2, question: 'Where was #1 born?', answer: 'Leeds', paragraphSupportIdx: 1 },
  ],
};
const worker = { subtask: 'Who founded Acme?', answer: 'Ada Byron' };
// Three samples of one question: right, half right, no answer.
const group = [
  makeTrajectory({ id: 't0', workers: [worker], finalAnswer: 'Ada Byron' }),
  makeTrajectory({ id: 't1', workers: [worker], finalAnswer: 'Ada Lovelace Byron' }),
  makeTrajectory({ id: 't2', workers: [worker], finalAnswer: null }),
].map((t) => ({ ...t, episodeId: 'ep' }));

const exact = defineReward(({ answer, gold }) => (answer !== null && gold.includes(answer) ? 1 : 0), 'exact');
/** 0.5 for an answer that holds the gold's last word: partial credit the accuracy reward cannot give. */
const partial = defineReward(({ answer, gold }) => {
  if (answer === null) return 0;
  if (gold.includes(answer)) return 1;
  return answer.split(' ').includes(gold[0].split(' ').at(-1) ?? '') ? 0.5 : 0;
}, 'partial');
const words = defineReward(({ answer }) => (answer === null ? 0 : answer.split(' ').length), 'words');

async function plannerAdvantages(outcome?: ReturnType<typeof combinedOutcome>): Promise<number[]> {
  const cfg = creditSection.parse({ method: 'broadcast' });
  const { res } = await creditAndRecord(
    group,
    episode,
    gameRunner(() => true),
    cfg,
    {},
    outcome,
  );
  const g = groupAdvantages(groupRewards({ trajectories: res.credited }), 1e-6);
  // Broadcast: a worker's advantage is its planner's (one worker per trajectory, the same reward).
  expect(g.adv.map((a) => a[1])).toEqual(g.adv.map((a) => a[0]));
  return g.adv.map((a) => a[0]);
}

describe('a user reward as the outcome reward', () => {
  it('without one the outcome is the accuracy of credit.success', () => {
    const outcome = outcomeFunction(creditSection.parse({ success: 'em' }));
    expect(group.map((t) => outcome(t, episode))).toEqual([1, 0, 0]);
    expect(group.map((t) => accuracyOutcome(emSuccess)(t, episode))).toEqual([1, 0, 0]);
  });

  it('the accuracy metric stays the share of right answers whatever the reward', () => {
    expect(answerAccuracy([{ episode, trajectories: group }], creditSection.parse({}))).toBeCloseTo(1 / 3, 12);
    expect(answerAccuracy([], creditSection.parse({}))).toBeNaN();
  });

  it('changes the advantages exactly as hand-computed', async () => {
    // Accuracy [1, 0, 0]: mean 1/3, std sqrt(2/9) = 0.471405 -> A = 1.414211, -0.707105, -0.707105.
    const acc = await plannerAdvantages();
    [1.4142106, -0.7071053, -0.7071053].forEach((a, i) => expect(acc[i]).toBeCloseTo(a, 6));
    // partial [1, 0.5, 0]: mean 0.5, std sqrt(1/6) = 0.408248 -> A = +-0.5 / 0.408249 = +-1.224742, and 0.
    const part = await plannerAdvantages(combinedOutcome(namedRewards([partial])));
    [1.2247419, 0, -1.2247419].forEach((a, i) => expect(part[i]).toBeCloseTo(a, 6));
  });

  it('sums several rewards with their weights, and the advantages follow the sum', async () => {
    // exact [1, 0, 0] x 1 + words [2, 3, 0] x -0.1 = [0.8, -0.3, 0]: mean 1/6, std 0.4642796
    // -> A = 0.633333 / 0.464280 = 1.364118, -0.466667 / ... = -1.005139, -0.166667 / ... = -0.358978.
    const specs: RewardSpec[] = [exact, { reward: words, weight: -0.1 }];
    const outcome = combinedOutcome(namedRewards(specs));
    group.forEach((t, i) => expect(outcome(t, episode)).toBeCloseTo([0.8, -0.3, 0][i], 12));
    const adv = await plannerAdvantages(outcome);
    [1.3641176, -1.0051393, -0.3589783].forEach((a, i) => expect(adv[i]).toBeCloseTo(a, 6));
  });
});

/**
 * Replays as the engine returns them for the mask counterfactual: the masked delegations' calls
 * flagged `masked`, the final answer 'Ada Byron' exactly when worker 0 reported.
 */
const maskingRunner: ReplayRunner = (items) =>
  Promise.resolve(
    items.map((it): Trajectory => {
      const masked = new Set(it.masked);
      const messages = it.traj.messages.map((m) => ({
        ...m,
        toolCalls: m.toolCalls.map((c) => {
          const d = c.workerAgent === undefined ? undefined : it.traj.agents[c.workerAgent]?.delegation;
          return d !== undefined && d !== null && masked.has(d) ? { ...c, masked: true } : c;
        }),
      }));
      return { ...it.traj, messages, finalAnswer: masked.has(0) ? 'Bob' : 'Ada Byron' };
    }),
  );

/** Right answer 1, plus 0.25 per report the planner read: it scores the replayed trajectory, not only its answer. */
const readsReports = defineReward(({ answer, gold, trajectory }) => {
  const read = trajectory.messages.flatMap((m) => m.toolCalls).filter((c) => c.name === 'delegate' && !c.masked);
  return (answer !== null && gold.includes(answer) ? 1 : 0) + 0.25 * read.length;
}, 'readsReports');

describe('credit decomposes a user reward as it does accuracy', () => {
  const two = {
    ...makeTrajectory({
      id: 'a',
      workers: [worker, { subtask: 'Where was Ada Byron born?', answer: 'Leeds' }],
      finalAnswer: 'Ada Byron',
    }),
    episodeId: 'ep',
  };
  const outcome = combinedOutcome(namedRewards([readsReports]));

  it('LOO: R_b is the recorded trajectory scored, each Delta compares replays scored whole', async () => {
    const cfg = creditSection.parse({ method: 'loo', replays: 1, weights: { broadcast: 0.9, marginal: 0.9, tool: 0 } });
    const r = await computeCredits([two], episode, maskingRunner, cfg, { outcome });
    const t = r.trajectories[0];
    // Recorded: right, both reports read: R_b = 1 + 0.5. v(N) = 1.5; v(N \ 0) = 0 + 0.25 (wrong answer,
    // one report); v(N \ 1) = 1 + 0.25. Delta = [1.25, 0.25] (accuracy alone gives [1, 0]).
    expect(t.success).toBe(1.5);
    expect(t.deltas).toEqual([1.25, 0.25]);
    expect(t.noise).toBe(0);
    // Planner: mean max(Delta, 0) = 0.75. Totals 0.9 R_b + 0.9 R_mc.
    expect(t.plannerMarginal).toBe(0.75);
    const totals = r.credits.map((c) => c.total);
    [0.9 * 1.5 + 0.9 * 0.75, 0.9 * 1.5 + 0.9 * 1.25, 0.9 * 1.5 + 0.9 * 0.25].forEach((x, i) =>
      expect(totals[i]).toBeCloseTo(x, 12),
    );
    const acc = await computeCredits([two], episode, maskingRunner, cfg);
    expect(acc.trajectories[0].deltas).toEqual([1, 0]);
  });

  it('Shapley: every coalition scored by the reward; phi sums to v(N) - v(empty)', async () => {
    const cfg = creditSection.parse({ method: 'shapley', shapleyMode: 'exact', replays: 1 });
    const r = await computeCredits([two], episode, maskingRunner, cfg, { outcome });
    // v(empty) = 0, v({0}) = 1.25, v({1}) = 0.25, v(N) = 1.5:
    // phi_0 = (1.25 - 0 + 1.5 - 0.25) / 2 = 1.25, phi_1 = (0.25 - 0 + 1.5 - 1.25) / 2 = 0.25.
    expect(r.trajectories[0].phi).toEqual([1.25, 0.25]);
    expect(r.trajectories[0].efficiencyResidual).toBeCloseTo(0, 12);
  });

  it('oracle: the planner gets the user reward, each worker its right / wrong label', async () => {
    const cfg = creditSection.parse({ method: 'oracle' });
    const wrong = { ...two, id: 'b', agents: two.agents.map((a) => (a.id === 2 ? { ...a, answer: 'York' } : a)) };
    const r = await computeCredits([two, wrong], episode, maskingRunner, cfg, { outcome });
    expect(r.credits.map((c) => [c.trajectoryId, c.role, c.total])).toEqual([
      ['a', 'planner', 1.5],
      ['a', 'worker', 1],
      ['a', 'worker', 1],
      ['b', 'planner', 1.5],
      ['b', 'worker', 1],
      ['b', 'worker', 0],
    ]);
  });

  it('a reward that fails on a replay stops credit with a one-line UserError, not a NaN advantage', async () => {
    const picky = defineReward(({ answer }) => (answer === 'Bob' ? Number.NaN : 1), 'picky');
    const cfg = creditSection.parse({ method: 'loo', replays: 1 });
    const err = await computeCredits([two], episode, maskingRunner, cfg, {
      outcome: combinedOutcome(namedRewards([picky])),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toBe(
      'reward \'picky\' returned NaN on question ep (trajectory a, answer "Bob"); a reward must return a finite number',
    );
  });
});
