import type { Trajectory } from '../rollout/types.ts';

/**
 * Tool-process reward: R_tool(m) = valid tool calls / tool calls of agent m,
 * over every assistant message of m (a planner's tool is `delegate`, a worker's search / calculate /
 * code). An agent that made no call gets a configured value: 0 by default so that never calling a
 * tool is not rewarded as "always valid".
 */
export interface ToolCounts {
  valid: number;
  total: number;
}

/** Valid and total tool calls of every agent of the trajectory, indexed by agent id. */
export function toolCounts(traj: Trajectory): ToolCounts[] {
  const counts = traj.agents.map(() => ({ valid: 0, total: 0 }));
  for (const msg of traj.messages) {
    if (msg.chatRole !== 'assistant') continue;
    const c = counts[msg.agent];
    if (!c)
      throw new Error(`trajectory ${traj.id}: message ${msg.index} names agent ${msg.agent}, which does not exist`);
    for (const call of msg.toolCalls) {
      c.total += 1;
      if (call.valid) c.valid += 1;
    }
  }
  return counts;
}

/** valid / total, or `noCallsValue` when total = 0. */
function toolRewardOf(c: ToolCounts, noCallsValue: number): number {
  return c.total === 0 ? noCallsValue : c.valid / c.total;
}

/** R_tool per agent id. */
export function toolRewards(traj: Trajectory, noCallsValue: number): number[] {
  return toolCounts(traj).map((c) => toolRewardOf(c, noCallsValue));
}

/**
 * Tool-format validity of the whole trajectory, every agent's calls together: MATPO's format term,
 * broadcast to every agent. `noCallsValue` when nobody called a tool.
 */
export function trajectoryToolReward(traj: Trajectory, noCallsValue: number): number {
  const all = toolCounts(traj).reduce((a, c) => ({ valid: a.valid + c.valid, total: a.total + c.total }), {
    valid: 0,
    total: 0,
  });
  return toolRewardOf(all, noCallsValue);
}
