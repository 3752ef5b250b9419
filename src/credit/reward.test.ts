import { describe, it, expect } from 'vitest';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { agentCredits } from './reward.ts';
import { creditReport, reportMetrics } from './report.ts';
import { toolCounts, toolRewards, trajectoryToolReward } from './tool-reward.ts';

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
    expect(toolCounts(traj)).toEqual([
      { valid: 1, total: 2 },
      { valid: 2, total: 3 },
      { valid: 0, total: 0 },
    ]);
    expect(toolRewards(traj, 0)).toEqual([0.5, 2 / 3, 0]);
    expect(toolRewards(traj, 1)[2]).toBe(1);
  });
  it("the whole trajectory: every agent's calls together", () => {
    // planner 1/2 + worker 0 2/3 + worker 1 none = 3 valid of 5
    expect(trajectoryToolReward(traj, 0)).toBe(3 / 5);
  });
});

describe('agent reward', () => {
  const inputs = { broadcast: 1, workerMarginal: [1, -0.5], plannerMarginal: 0.5, tool: [0.5, 2 / 3, 0] };
  const w = { broadcast: 1, marginal: 0.9, tool: 0.1 };
  const sharp = (toolGate: boolean) => ({ kind: 'sharp' as const, weights: w, toolGate });
  it('R = w_b R_b + w_mc R_mc + w_tool R_tool', () => {
    const c = agentCredits(traj, inputs, sharp(false));
    // planner: 1 + 0.9*0.5 + 0.1*0.5 = 1.5; worker 0: 1 + 0.9 + 0.1*2/3; worker 1: 1 - 0.45 + 0 = 0.55
    expect(c.map((x) => x.total)).toEqual([1.5, 1 + 0.9 + 0.1 * (2 / 3), 0.55].map((x) => expect.closeTo(x, 12)));
    expect(c.map((x) => [x.role, x.delegation])).toEqual([
      ['planner', null],
      ['worker', 0],
      ['worker', 1],
    ]);
    expect(c[1].parts).toEqual({ broadcast: 1, marginal: 1, tool: 2 / 3 });
  });
  it('gate drops the tool reward on failures only', () => {
    const failed = agentCredits(traj, { ...inputs, broadcast: 0 }, sharp(true));
    expect(failed.map((x) => x.parts.tool)).toEqual([0, 0, 0]);
    expect(failed[0].total).toBeCloseTo(0.45, 12); // 0 + 0.9*0.5 + 0
    const ok = agentCredits(traj, inputs, sharp(true));
    expect(ok[0].parts.tool).toBe(0.5);
  });
  it('broadcast: every agent gets R_b and nothing else, even with marginal and tool inputs', () => {
    for (const b of [0, 1]) {
      const c = agentCredits(traj, { ...inputs, broadcast: b }, { kind: 'broadcast' });
      expect(c.map((x) => x.total)).toEqual([b, b, b]);
      expect(c.map((x) => x.parts)).toEqual([0, 1, 2].map(() => ({ broadcast: b, marginal: 0, tool: 0 })));
    }
  });
  it('matpo: 1.0 accuracy + 0.1 format validity of the whole trajectory, the same for every agent', () => {
    const c = agentCredits(traj, inputs, {
      kind: 'matpo',
      accuracy: 1,
      formatWeight: 0.1,
      format: trajectoryToolReward(traj, 0),
    });
    // 1 + 0.1 * 3/5 = 1.06 for the planner and both workers
    expect(c.map((x) => x.total)).toEqual([1.06, 1.06, 1.06].map((x) => expect.closeTo(x, 12)));
    expect(c[2].parts).toEqual({ broadcast: 1, marginal: 0, tool: 0.6 });
  });
  it('one-line error when inputs do not fit the trajectory', () => {
    expect(() => agentCredits(traj, { ...inputs, tool: [1] }, sharp(false))).toThrow(
      /trajectory t: 1 tool rewards for 3 agents/,
    );
    expect(() => agentCredits(traj, { ...inputs, workerMarginal: [1] }, sharp(false))).toThrow(
      /worker agent 2 has delegation 1 outside 0\.\.0/,
    );
  });
});

describe('credit report', () => {
  it('helpful / neutral / harmful fractions, mean credit per role, max residual', () => {
    const credits = agentCredits(
      traj,
      { broadcast: 1, workerMarginal: [1, -1], plannerMarginal: 0.5, tool: [0, 0, 0] },
      { kind: 'sharp', weights: { broadcast: 1, marginal: 1, tool: 0 }, toolGate: false },
    );
    const r = creditReport(
      [
        { trajectoryId: 't', deltas: [1, -1], efficiencyResidual: 1e-17, success: 1, noise: 0.5 },
        { trajectoryId: 'u', deltas: [0, 1], efficiencyResidual: 3e-16, success: 0, noise: 0 },
        { trajectoryId: 'v', deltas: [0, 0, 0], success: 0, noise: 1 },
        { trajectoryId: 'w', deltas: [], success: 1, noise: 0 },
      ],
      credits,
    );
    // deltas: +, -, 0, +, 0, 0, 0 -> 2/7 helpful, 4/7 neutral, 1/7 harmful
    // noise floor over the 3 trajectories with workers: (0.5 + 0 + 1) / 3; non-zero: 2/2 in the success, 1/5 in the
    // failures
    expect(r).toEqual({
      workerCalls: 7,
      helpful: 2 / 7,
      neutral: 4 / 7,
      harmful: 1 / 7,
      meanCredit: { planner: 1.5, worker: 1 },
      meanMarginal: { planner: 0.5, worker: 0 },
      maxEfficiencyResidual: 3e-16,
      noiseFloor: 0.5,
      nonzeroInSuccess: 1,
      nonzeroInFailure: 0.2,
    });
    expect(reportMetrics(r)).toMatchObject({
      'credit/helpful': 2 / 7,
      'credit/mean/planner': 1.5,
      'credit/shapley_residual_max': 3e-16,
      'credit/noise_floor': 0.5,
      'credit/nonzero_success': 1,
      'credit/nonzero_failure': 0.2,
    });
    expect(creditReport([], [])).toMatchObject({
      maxEfficiencyResidual: null,
      noiseFloor: null,
      nonzeroInSuccess: null,
      nonzeroInFailure: null,
    });
  });
});
