import { describe, it, expect } from 'vitest';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { agentCredits } from './reward.ts';
import { creditReport, reportMetrics } from './report.ts';
import { toolCounts, toolRewards } from './tool-reward.ts';

const traj = makeTrajectory({
  id: 't',
  workers: [
    { subtask: 'a', answer: 'x', calls: [true, false, true] },
    { subtask: 'b', answer: 'y', calls: [] },
  ],
  finalAnswer: 'x',
  delegateValid: [true, false],
});

describe('tool reward', () => {
  it('valid / total per agent, configured value without calls', () => {
    expect(toolCounts(traj)).toEqual([{ valid: 1, total: 2 }, { valid: 2, total: 3 }, { valid: 0, total: 0 }]);
    expect(toolRewards(traj, 0)).toEqual([0.5, 2 / 3, 0]);
    expect(toolRewards(traj, 1)[2]).toBe(1);
  });
});

describe('agent reward', () => {
  const inputs = { broadcast: 1, workerMarginal: [1, -0.5], plannerMarginal: 0.5, tool: [0.5, 2 / 3, 0] };
  const w = { broadcast: 1, marginal: 0.9, tool: 0.1 };
  it('R = w_b R_b + w_mc R_mc + w_tool R_tool', () => {
    const c = agentCredits(traj, inputs, w, false);
    // planner: 1 + 0.9*0.5 + 0.1*0.5 = 1.5; worker 0: 1 + 0.9 + 0.1*2/3; worker 1: 1 - 0.45 + 0 = 0.55
    expect(c.map((x) => x.total)).toEqual([1.5, 1 + 0.9 + 0.1 * (2 / 3), 0.55].map((x) => expect.closeTo(x, 12)));
    expect(c.map((x) => [x.role, x.delegation])).toEqual([['planner', null], ['worker', 0], ['worker', 1]]);
    expect(c[1].parts).toEqual({ broadcast: 1, marginal: 1, tool: 2 / 3 });
  });
  it('gate drops the tool reward on failures only', () => {
    const failed = agentCredits(traj, { ...inputs, broadcast: 0 }, w, true);
    expect(failed.map((x) => x.parts.tool)).toEqual([0, 0, 0]);
    expect(failed[0].total).toBeCloseTo(0.45, 12); // 0 + 0.9*0.5 + 0
    const ok = agentCredits(traj, inputs, w, true);
    expect(ok[0].parts.tool).toBe(0.5);
  });
  it('one-line error when inputs do not fit the trajectory', () => {
    expect(() => agentCredits(traj, { ...inputs, tool: [1] }, w, false)).toThrow(/trajectory t: 1 tool rewards for 3 agents/);
    expect(() => agentCredits(traj, { ...inputs, workerMarginal: [1] }, w, false)).toThrow(/worker agent 2 has delegation 1 outside 0\.\.0/);
  });
});

describe('credit report', () => {
  it('helpful / neutral / harmful fractions, mean credit per role, max residual', () => {
    const credits = agentCredits(traj, { broadcast: 1, workerMarginal: [1, -1], plannerMarginal: 0.5, tool: [0, 0, 0] }, { broadcast: 1, marginal: 1, tool: 0 }, false);
    const r = creditReport(
      [
        { trajectoryId: 't', deltas: [1, -1], efficiencyResidual: 1e-17 },
        { trajectoryId: 'u', deltas: [0, 1], efficiencyResidual: 3e-16 },
      ],
      credits,
    );
    // deltas: +, -, 0, + -> 2/4 helpful, 1/4 neutral, 1/4 harmful
    expect(r).toEqual({ workerCalls: 4, helpful: 0.5, neutral: 0.25, harmful: 0.25, meanCredit: { planner: 1.5, worker: 1 }, meanMarginal: { planner: 0.5, worker: 0 }, maxEfficiencyResidual: 3e-16 });
    expect(reportMetrics(r)).toMatchObject({ 'credit/helpful': 0.5, 'credit/mean/planner': 1.5, 'credit/shapley_residual_max': 3e-16 });
    expect(creditReport([], []).maxEfficiencyResidual).toBeNull();
  });
});
