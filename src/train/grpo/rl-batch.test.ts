import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fitBpeTokenizer, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import type { AgentCredit } from '../../credit/reward.ts';
import type { Message, Trajectory } from '../../rollout/types.ts';
import { creditedTrajectories } from '../../credit/credited.ts';
import { buildRlBatch, groupRewards, rewardMetrics, updateMetrics } from './rl-batch.ts';
import type { CreditedGroup } from './types.ts';

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
    return { index, agent, role: agent === 0 ? 'planner' : 'worker', chatRole, text, tokenIds, logprobs: tokenIds.map(() => -1), toolCalls: [] };
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

const credit = (trajectoryId: string, agent: number, broadcast: number, marginal: number, tool: number): AgentCredit => ({
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
      // success vs failure: planner totals 1 + 0.9 * 1 + 0.1 = 2.0 and 0; workers 1 + 0.9 + 0.1 = 2.0 and 0 + 0 + 0.1 = 0.1
      trajectories: creditedTrajectories([traj('a1', '1950'), traj('a2', '1960')], [credit('a1', 0, 1, 1, 1), credit('a1', 1, 1, 1, 1), credit('a2', 0, 0, 0, 0), credit('a2', 1, 0, 0, 1)], []),
    },
    {
      // both failed identically: every advantage 0 -> skipped
      trajectories: creditedTrajectories([traj('b1', 'x'), traj('b2', 'y')], [credit('b1', 0, 0, 0, 0), credit('b1', 1, 0, 0, 0), credit('b2', 0, 0, 0, 0), credit('b2', 1, 0, 0, 0)], []),
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
    expect(() => creditedTrajectories([traj('a1', '1950')], [credit('a1', 1, 1, 1, 1)], [])).toThrow('no credit for trajectory a1 agent 0');
    expect(() => creditedTrajectories([traj('a1', '1950')], [credit('a1', 0, 1, 1, 1), { ...credit('a1', 1, 1, 1, 1), role: 'planner' }], [])).toThrow('the credit of trajectory a1 agent 1 is for a planner, the agent is a worker');
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
          ...(a1 as (typeof a1) & object),
          messages: [
            { trajectoryId: 'a1', messageIndex: 1, agent: 0, label: 1, reward: 1.5 },
            { trajectoryId: 'a1', messageIndex: 5, agent: 0, label: -1, reward: 0.5 },
          ],
        },
        a2 as (typeof a2) & object,
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
    expect((worker?.tokenAdv ?? []).filter((_, i) => worker?.trainMask[i] === 1).every((x) => Math.abs(x - (worker?.adv ?? 0)) < 1e-12)).toBe(true);
    const bad: CreditedGroup = { trajectories: [{ ...(a1 as (typeof a1) & object), messages: [{ trajectoryId: 'a1', messageIndex: 1, agent: 7, label: 0 as const, reward: 1 }] }, a2 as (typeof a2) & object] };
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

  it('maps update stats to namespaced metric names', () => {
    const m = updateMetrics({ loss: 0.5, grpoLoss: 0.4, gradNorm: 2, tokens: 10, sequences: 3, microBatches: 1, clipFracLow: 0.1, clipFracHigh: 0.2, 'dpo/loss': 0.1 });
    expect(m).toEqual({
      'losses/total': 0.5,
      'losses/policy': 0.4,
      'grad/norm': 2,
      'batch/tokens': 10,
      'batch/sequences': 3,
      'batch/micro_batches': 1,
      'losses/clipfrac_low': 0.1,
      'losses/clipfrac_high': 0.2,
      'losses/clipfrac': expect.closeTo(0.3, 12) as number,
      'dpo/loss': 0.1,
    });
  });
});
