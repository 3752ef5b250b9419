import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fitBpeTokenizer, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import type { AgentCredit } from '../../credit/reward.ts';
import type { Message, Trajectory } from '../../rollout/types.ts';
import { withCredits } from '../../../test/credit-fixtures.ts';
import {
  batchAdvantages,
  buildRlBatch,
  groupAdvantages,
  groupRewards,
  meanPopulationStd,
  messageAdvantage,
  rewardMetrics,
  type GroupRewards,
} from './advantages.ts';
import type { CreditedGroup } from './types.ts';

const P = (total: number) => ({ role: 'planner' as const, total });
const W = (total: number) => ({ role: 'worker' as const, total });

describe('meanPopulationStd', () => {
  it('uses the population std', () => {
    // [1, 2, 3, 4]: mean 2.5, var = (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25 -> std 1.118034
    const { mean, std } = meanPopulationStd([1, 2, 3, 4]);
    expect(mean).toBe(2.5);
    expect(std).toBeCloseTo(1.118034, 6);
  });
});

describe('groupAdvantages', () => {
  it('normalises per role over the whole group (hand-computed)', () => {
    const group: GroupRewards = [
      [P(1), W(0.5), W(1)],
      [P(0), W(-0.5)],
    ];
    const g = groupAdvantages(group, 1e-6);
    // planners [1, 0]: mean 0.5, std 0.5 -> A = +-0.5 / 0.500001 = +-0.999998
    expect(g.adv[0][0]).toBeCloseTo(0.999998, 6);
    expect(g.adv[1][0]).toBeCloseTo(-0.999998, 6);
    // workers [0.5, 1, -0.5]: mean 1/3, var = (1/36 + 16/36 + 25/36) / 3 = 7/18, std = 0.6236096
    // A = (1/6) / 0.6236096 = 0.267261, (2/3) / ... = 1.069045, (-5/6) / ... = -1.336306
    expect(g.adv[0][1]).toBeCloseTo(0.267261, 5);
    expect(g.adv[0][2]).toBeCloseTo(1.069045, 5);
    expect(g.adv[1][1]).toBeCloseTo(-1.336306, 5);
    expect(g.roles.worker).toEqual({ n: 3, mean: 1 / 3, std: expect.closeTo(0.6236096, 6) as number });
    expect(g.skipped).toBe(false);
  });

  it('gives exactly zero to a constant role and to a role seen once', () => {
    // 0.1 * 3 / 3 is not exactly 0.1 in floating point: without the constant-role rule A would be ~1e-11.
    const g = groupAdvantages([[P(0.1), W(1)], [P(0.1)], [P(0.1)]], 1e-6);
    expect(g.adv).toEqual([[0, 0], [0], [0]]);
    expect(g.skipped).toBe(true);
  });

  it('rejects a non-finite reward with a one-line error naming the agent', () => {
    expect(() => groupAdvantages([[P(1)], [P(Number.NaN)]], 1e-6)).toThrow(
      'reward of trajectory 1 agent 0 is not finite',
    );
  });
});

describe('batchAdvantages', () => {
  it('counts skipped groups and reports stats over live groups only', () => {
    const b = batchAdvantages(
      [
        [[P(1)], [P(1)]], // all equal -> skipped
        [[P(1)], [P(0)]], // A = +-0.999998
        [[P(0)], [P(0)]], // skipped
      ],
      1e-6,
    );
    expect(b.skippedGroups).toBe(2);
    expect(b.groups.map((g) => g.skipped)).toEqual([true, false, true]);
    expect(b.stats.agents).toBe(2);
    expect(b.stats.mean).toBeCloseTo(0, 9);
    expect(b.stats.max).toBeCloseTo(0.999998, 6);
    expect(b.stats.min).toBeCloseTo(-0.999998, 6);
  });
});

describe('train.scaleRewards', () => {
  // Two groups of planners: an all-failed group where only the tool reward varies ([0.1, 0.05]) and
  // a mixed group ([1.1, 0.1]). Batch std of [0.1, 0.05, 1.1, 0.1]: mean 0.3375,
  // var = (0.05640625 + 0.08265625 + 0.58140625 + 0.05640625) / 4 = 0.19421875, std = 0.4407025.
  const groups: GroupRewards[] = [
    [[P(0.1)], [P(0.05)]],
    [[P(1.1)], [P(0.1)]],
  ];
  it('group: each group stretched to unit scale, the tool-only one too', () => {
    const b = batchAdvantages(groups, 1e-6, 'group');
    expect(b.groups[0].adv[0][0]).toBeCloseTo(0.025 / 0.025001, 5);
    expect(b.groups[1].adv[0][0]).toBeCloseTo(0.5 / 0.500001, 5);
  });
  it('batch: centred per group, scaled by the step std of the role', () => {
    const b = batchAdvantages(groups, 1e-6, 'batch');
    expect(b.groups[0].adv[0][0]).toBeCloseTo(0.025 / 0.4407035, 5);
    expect(b.groups[0].adv[1][0]).toBeCloseTo(-0.025 / 0.4407035, 5);
    expect(b.groups[1].adv[0][0]).toBeCloseTo(0.5 / 0.4407035, 5);
  });
  it('none: centred only (Dr. GRPO)', () => {
    const b = batchAdvantages(groups, 1e-6, 'none');
    expect(b.groups[0].adv[0][0]).toBeCloseTo(0.025, 9);
    expect(b.groups[1].adv[1][0]).toBeCloseTo(-0.5, 9);
    expect(batchAdvantages([[[P(1)], [P(1)]]], 1e-6, 'none').skippedGroups).toBe(1);
  });
});

describe('messageAdvantage', () => {
  it('scores a message as if its agent had earned T r_t: same centring and scale, mean over messages = A(i, m)', () => {
    // workers [2, 0.1]: mean 1.05, std 0.95. Worker 0 has 2 messages with shares 1.4 + 0.6 = 2.
    const g = groupAdvantages([[W(2)], [W(0.1)]], 1e-6);
    const a0 = messageAdvantage(g, 'worker', 2, 1.4, 2); // (2.8 - 1.05) / 0.950001 (alone, the group divisor)
    const a1 = messageAdvantage(g, 'worker', 2, 0.6, 2); // (1.2 - 1.05) / 0.950001
    expect(a0).toBeCloseTo(1.75 / 0.950001, 6);
    expect(a1).toBeCloseTo(0.15 / 0.950001, 6);
    expect((a0 + a1) / 2).toBeCloseTo(g.adv[0][0], 9);
    expect(g.divisor.worker).toBeCloseTo(0.950001, 9);
  });
  it('keeps 0 for a role with equal rewards, and checks its inputs', () => {
    const g = groupAdvantages(
      [
        [P(0.1), W(1)],
        [P(0.1), W(0)],
      ],
      1e-6,
    );
    expect(g.divisor.planner).toBe(0);
    expect(messageAdvantage(g, 'planner', 0.1, 0.3, 2)).toBe(0);
    expect(() => messageAdvantage(g, 'worker', 1, 0.3, 0)).toThrow('message count must be an integer >= 1, got 0');
    expect(() => messageAdvantage(g, 'worker', 1, Number.NaN, 1)).toThrow('message reward is not finite');
  });
  it("in a step, scales a message's deviation by the step std of the role: a tool-only group cannot stretch it", () => {
    // Group 0 failed everywhere: workers [0.1, 0.05] (group std 0.025). Group 1: workers [1.1, 0.1].
    // Step std of [0.1, 0.05, 1.1, 0.1] = 0.4407025 (see train.scaleRewards above).
    const b = batchAdvantages(
      [
        [[W(0.1)], [W(0.05)]],
        [[W(1.1)], [W(0.1)]],
      ],
      1e-6,
    );
    const g0 = b.groups[0];
    // The worker of R = 0.1 with two messages of shares 0.075 / 0.025 (T r_t = 0.15 / 0.05):
    // A = 0.025 / 0.025001 = 0.99996, deviations +-0.05 / 0.4407035 = +-0.113455.
    expect(messageAdvantage(g0, 'worker', 0.1, 0.075, 2)).toBeCloseTo(0.025 / 0.025001 + 0.05 / 0.4407035, 5);
    expect(messageAdvantage(g0, 'worker', 0.1, 0.025, 2)).toBeCloseTo(0.025 / 0.025001 - 0.05 / 0.4407035, 5);
    // With the group divisor the same deviation would be +-2.0: twice the agent's whole advantage.
    expect(0.05 / (g0.divisor.worker as number)).toBeCloseTo(2, 3);
    expect(batchAdvantages([[[W(1)], [W(0)]]], 1e-6, 'none').groups[0].messageDivisor.worker).toBe(1);
  });
});

let dir: string;
let tok: Tokenizer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-rlb-'));
  await writeTokenizerFiles(dir, fitBpeTokenizer(['delegate answer search result Zorvex Alin Marek 1950'], 300));
  tok = await Tokenizer.load(dir);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A planner that delegates once to a worker, then answers: 2 planner turns, 1 worker turn. */
function traj(id: string, answer: string): Trajectory {
  const m = (index: number, agent: number, chatRole: Message['chatRole'], text: string): Message => {
    const tokenIds = chatRole === 'assistant' ? tok.encode(text, { addSpecialTokens: false }) : [];
    return {
      index,
      agent,
      role: agent === 0 ? 'planner' : 'worker',
      chatRole,
      text,
      tokenIds,
      logprobs: tokenIds.map(() => -1),
      toolCalls: [],
    };
  };
  return {
    id,
    episodeId: 'e',
    sample: 0,
    messages: [
      m(0, 0, 'user', 'When was the founder of Zorvex born?'),
      m(1, 0, 'assistant', '<delegate>Zorvex founder</delegate>'),
      m(2, 1, 'user', 'Zorvex founder'),
      m(3, 1, 'assistant', '<answer>Alin Marek</answer>'),
      m(4, 0, 'tool', '<result>Alin Marek</result>'),
      m(5, 0, 'assistant', `<answer>${answer}</answer>`),
    ],
    agents: [
      { id: 0, role: 'planner', delegation: null, answer, endReason: 'answer' },
      { id: 1, role: 'worker', delegation: 0, answer: 'Alin Marek', endReason: 'answer' },
    ],
    finalAnswer: answer,
  };
}

const credit = (
  trajectoryId: string,
  agent: number,
  broadcast: number,
  marginal: number,
  tool: number,
): AgentCredit => ({
  trajectoryId,
  agent,
  role: agent === 0 ? 'planner' : 'worker',
  delegation: agent === 0 ? null : 0,
  parts: { broadcast, marginal, tool },
  total: broadcast + 0.9 * marginal + 0.1 * tool,
});

function groups(): CreditedGroup[] {
  return [
    {
      // success vs failure: planner totals 1 + 0.9 * 1 + 0.1 = 2.0 and 0; workers 1 + 0.9 + 0.1 = 2.0 and 0 + 0 + 0.1 =
      // 0.1
      trajectories: withCredits(
        [traj('a1', '1950'), traj('a2', '1960')],
        [credit('a1', 0, 1, 1, 1), credit('a1', 1, 1, 1, 1), credit('a2', 0, 0, 0, 0), credit('a2', 1, 0, 0, 1)],
      ),
    },
    {
      // both failed identically: every advantage 0 -> skipped
      trajectories: withCredits(
        [traj('b1', 'x'), traj('b2', 'y')],
        [credit('b1', 0, 0, 0, 0), credit('b1', 1, 0, 0, 0), credit('b2', 0, 0, 0, 0), credit('b2', 1, 0, 0, 0)],
      ),
    },
  ];
}

describe('rl batch', () => {
  it('orders rewards by trajectory and agent id; attaching credit names a missing or mismatched one', () => {
    const g = groups()[0] as CreditedGroup;
    expect(groupRewards(g)).toEqual([
      [
        { role: 'planner', total: 2 },
        { role: 'worker', total: 2 },
      ],
      [
        { role: 'planner', total: 0 },
        { role: 'worker', total: 0.1 },
      ],
    ]);
  });

  it('builds one (packed) sequence per agent of live groups, with the agent advantage', () => {
    const b = buildRlBatch(groups(), tok, 1e-6);
    expect(b.advantages.skippedGroups).toBe(1);
    // group a: planners [2, 0] -> +-1 (std 1); workers [2, 0.1]: mean 1.05, std 0.95 -> +-1.
    // The planner's two turns pack into one sequence (ChatML extends each prompt).
    expect(b.sequences.map((s) => [s.source.trajectory, s.source.agent, Number(s.adv.toFixed(5))])).toEqual([
      ['a1', 0, 1],
      ['a1', 1, 1],
      ['a2', 0, -1],
      ['a2', 1, -1],
    ]);
    expect(buildRlBatch(groups(), tok, 1e-6, 5).dropped).toBe(4); // every sequence is longer than 5 tokens
  });

  it('message rewards (credit.messageLevel) give each message its own advantage', () => {
    const [g] = groups();
    // Planner a1 (total 2) splits its credit over its two messages as 1.5 + 0.5; planners [2, 0]:
    // mean 1, divisor 1.000001, so A = (2 * 1.5 - 1) / 1.000001 and (2 * 0.5 - 1) / 1.000001 = 0.
    const [a1, a2] = (g as CreditedGroup).trajectories;
    const withShares: CreditedGroup = {
      trajectories: [
        {
          ...(a1 as typeof a1 & object),
          messages: [
            { trajectoryId: 'a1', messageIndex: 1, agent: 0, label: 1, reward: 1.5 },
            { trajectoryId: 'a1', messageIndex: 5, agent: 0, label: -1, reward: 0.5 },
          ],
        },
        a2 as typeof a2 & object,
      ],
    };
    const b = buildRlBatch([withShares], tok, 1e-6);
    const planner = b.sequences.find((s) => s.source.trajectory === 'a1' && s.source.agent === 0);
    const trained = (planner?.tokenAdv ?? []).filter((_, i) => planner?.trainMask[i] === 1);
    const first = tok.encode('<delegate>Zorvex founder</delegate>', { addSpecialTokens: false }).length;
    expect(trained.slice(0, first).every((x) => Math.abs(x - 2 / 1.000001) < 1e-9)).toBe(true);
    expect(trained.slice(first).every((x) => Math.abs(x) < 1e-9)).toBe(true);
    // The worker of a1 has no message reward: its tokens keep the agent advantage.
    const worker = b.sequences.find((s) => s.source.trajectory === 'a1' && s.source.agent === 1);
    expect(
      (worker?.tokenAdv ?? [])
        .filter((_, i) => worker?.trainMask[i] === 1)
        .every((x) => Math.abs(x - (worker?.adv ?? 0)) < 1e-12),
    ).toBe(true);
    const bad: CreditedGroup = {
      trajectories: [
        {
          ...(a1 as typeof a1 & object),
          messages: [{ trajectoryId: 'a1', messageIndex: 1, agent: 7, label: 0 as const, reward: 1 }],
        },
        a2 as typeof a2 & object,
      ],
    };
    expect(() => buildRlBatch([bad], tok, 1e-6)).toThrow('names agent 7, which it does not have');
  });

  it('computes reward metrics per role and accuracy (hand-computed)', () => {
    const gs = groups();
    const m = rewardMetrics(gs, buildRlBatch(gs, tok, 1e-6).advantages);
    // planner totals [2, 0, 0, 0] -> 0.5; worker totals [2, 0.1, 0, 0] -> 0.525; accuracy 1 of 4
    expect(m['reward/planner']).toBeCloseTo(0.5, 12);
    expect(m['reward/worker']).toBeCloseTo(0.525, 12);
    expect(m['reward/tool/worker']).toBeCloseTo(0.5, 12);
    expect(m['credit/worker']).toBeCloseTo(0.25, 12);
    expect(m.accuracy).toBe(0.25);
    expect(m['groups/skipped']).toBe(1);
    expect(m['adv/max']).toBeCloseTo(1, 5);
  });
});
