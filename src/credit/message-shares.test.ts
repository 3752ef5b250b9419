import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { type Label, messageShares, shareBound, trajectoryMessageRewards } from './message-shares.ts';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import type { AgentCredit } from './reward.ts';

describe('message shares', () => {
  it('hand-computed: r_t = C/T + beta|C|(s_t - s_bar)/T', () => {
    // C = 1, T = 3, s = [+1, +1, -1], s_bar = 1/3, beta = 1:
    // r = 1/3 + (2/3)/3 = 5/9, 5/9, 1/3 - (4/3)/3 = -1/9; sum = 1
    const r = messageShares(1, [1, 1, -1], 1);
    expect(r[0]).toBeCloseTo(5 / 9, 15);
    expect(r[1]).toBeCloseTo(5 / 9, 15);
    expect(r[2]).toBeCloseTo(-1 / 9, 15);
    // C = -0.9 (blame), s = [+1, 0, -1], s_bar = 0: r = -0.3 + 0.3 s -> [0, -0.3, -0.6]
    const b = messageShares(-0.9, [1, 0, -1], 1);
    expect(b[0]).toBeCloseTo(0, 15);
    expect(b[1]).toBeCloseTo(-0.3, 15);
    expect(b[2]).toBeCloseTo(-0.6, 15);
    // equal labels or beta = 0: even split
    expect(messageShares(2, [-1, -1], 1)).toEqual([1, 1]);
    expect(messageShares(2, [1, -1], 0)).toEqual([1, 1]);
    expect(messageShares(0, [1, -1], 1)).toEqual([0, 0]);
    expect(messageShares(3, [], 1)).toEqual([]);
  });
  it('conserves to 1e-9, stays within (1+2beta)|C|/T, and orders by label (property)', () => {
    const label = fc.constantFrom<Label>(-1, 0, 1);
    fc.assert(
      fc.property(
        fc.double({ min: -5, max: 5, noNaN: true }),
        fc.array(label, { minLength: 1, maxLength: 40 }),
        fc.double({ min: 0, max: 3, noNaN: true }),
        (c, labels, beta) => {
          const r = messageShares(c, labels, beta);
          const sum = r.reduce((a, b) => a + b, 0);
          expect(Math.abs(sum - c)).toBeLessThan(1e-9);
          const bound = shareBound(c, labels.length, beta);
          expect(Math.max(...r.map(Math.abs))).toBeLessThanOrEqual(bound + 1e-12);
          // ordering: every +1 share >= every 0 share >= every -1 share
          const by = (l: Label): number[] => r.filter((_, i) => labels[i] === l);
          const [lo, mid, hi] = [by(-1), by(0), by(1)];
          if (hi.length && mid.length) expect(Math.min(...hi)).toBeGreaterThanOrEqual(Math.max(...mid));
          if (mid.length && lo.length) expect(Math.min(...mid)).toBeGreaterThanOrEqual(Math.max(...lo));
          if (hi.length && lo.length) expect(Math.min(...hi)).toBeGreaterThanOrEqual(Math.max(...lo));
        },
      ),
      { numRuns: 2000, seed: 42 },
    );
  });
  it('rejects labels outside {-1, 0, 1} and negative beta', () => {
    expect(() => messageShares(1, [2 as Label], 1)).toThrow(/label 2/);
    expect(() => messageShares(1, [0], -1)).toThrow(/messageShareBeta/);
  });
  it('splits each agent total over its generated messages', () => {
    const traj = makeTrajectory({
      id: 't',
      workers: [{ subtask: 'a', answer: 'x', calls: [true, false] }],
      finalAnswer: 'x',
    });
    const credits: AgentCredit[] = [
      {
        trajectoryId: 't',
        agent: 0,
        role: 'planner',
        delegation: null,
        parts: { broadcast: 1, marginal: 1, tool: 1 },
        total: 2,
      },
      {
        trajectoryId: 't',
        agent: 1,
        role: 'worker',
        delegation: 0,
        parts: { broadcast: 1, marginal: 1, tool: 0.5 },
        total: 1.95,
      },
    ];
    // worker messages: search (valid), search (invalid, label -1), answer (label +1)
    const workerMsgs = traj.messages.filter((m) => m.agent === 1 && m.chatRole === 'assistant').map((m) => m.index);
    const labels = new Map<number, Label>([
      [workerMsgs[1], -1],
      [workerMsgs[2], 1],
    ]);
    const r = trajectoryMessageRewards(traj, credits, labels, 1);
    const w = r.filter((x) => x.agent === 1);
    expect(w.map((x) => x.label)).toEqual([0, -1, 1]);
    // C = 1.95, T = 3, s_bar = 0: r = 0.65 + 0.65 s
    expect(w[0].reward).toBeCloseTo(0.65, 12);
    expect(w[1].reward).toBeCloseTo(0, 12);
    expect(w[2].reward).toBeCloseTo(1.3, 12);
    // Unjudged messages keep the even share; only the judged ones trade credit. A worker with an
    // unjudged search and an accepted answer gets the even split (C / 2 each), not 0.5 / 1.5 as it
    // would if the search counted as label 0.
    const one = trajectoryMessageRewards(traj, credits, new Map<number, Label>([[workerMsgs[2], 1]]), 1).filter(
      (x) => x.agent === 1,
    );
    expect(one.map((x) => x.reward)).toEqual([0.65, 0.65, 0.65].map((v) => expect.closeTo(v, 12) as number));
    expect(messageShares(2, [undefined, 0, 1], 1)).toEqual(
      [2 / 3, 2 / 3 - 1 / 3, 2 / 3 + 1 / 3].map((v) => expect.closeTo(v, 12) as number),
    );
    expect(messageShares(2, [undefined, undefined], 1)).toEqual([1, 1]);
    const p = r.filter((x) => x.agent === 0);
    expect(p).toHaveLength(2); // delegate + answer
    expect(p[0].reward + p[1].reward).toBeCloseTo(2, 12);
  });
});
