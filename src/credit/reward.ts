import type { Role, Trajectory } from '../rollout/types.ts';

/**
 * The reward of each agent under one of four rules (credit.method chooses; the arms of the
 * ablation differ only here):
 * - broadcast: R(i,m) = R_b, the same accuracy reward for every agent, nothing per agent;
 * - matpo: R(i,m) = a R_b + f R_fmt(i), MATPO's reward: accuracy plus the tool-format validity of
 *   the whole trajectory, broadcast to every agent;
 * - sharp (loo, shapley): R(i,m) = w_b R_b + w_mc R_mc(m) + w_tool R_tool(m), per agent. The optional
 *   gate counts the tool reward only when the outcome succeeded (R_b > 0), so valid-but-useless
 *   tool use cannot earn reward on failures;
 * - oracle (a ceiling, not a method): R(i,m) = 1 when worker m's report is its hop's gold answer,
 *   else 0; the planner's is R_b (cf. StepSearch, arXiv 2505.15107).
 */
interface RewardWeights {
  broadcast: number;
  marginal: number;
  tool: number;
}

/** The trainer reads `role` (advantage normalisation per role) and `total` (the reward). */
export interface AgentCredit {
  trajectoryId: string;
  /** Index into Trajectory.agents (planner 0). */
  agent: number;
  role: Role;
  /** Delegation that spawned the worker; null for the planner. */
  delegation: number | null;
  /** Unweighted reward parts entering the total (tool after the gate). */
  parts: { broadcast: number; marginal: number; tool: number };
  total: number;
}

export interface TrajectoryRewardInputs {
  /** R_b = R(tau_i). */
  broadcast: number;
  /** R_mc of each worker, indexed by delegation (LOO Delta or Shapley phi; zeros for method none). */
  workerMarginal: readonly number[];
  /** R_mc of the planner. */
  plannerMarginal: number;
  /** R_tool indexed by agent id. */
  tool: readonly number[];
}

export type RewardRule =
  | { kind: 'broadcast' }
  /** The oracle ceiling: a worker's reward is its marginal (1 right report, 0 wrong), the planner's the outcome. */
  | { kind: 'oracle' }
  /** `format`: R_fmt of the trajectory (trajectoryToolReward). */
  | { kind: 'matpo'; accuracy: number; formatWeight: number; format: number }
  | { kind: 'sharp'; weights: RewardWeights; toolGate: boolean };

/** Every agent gets the same reward: the parts say what it is made of (no marginal term). */
function broadcastCredits(traj: Trajectory, broadcast: number, tool: number, total: number): AgentCredit[] {
  return traj.agents.map((a) => ({
    trajectoryId: traj.id,
    agent: a.id,
    role: a.role,
    delegation: a.role === 'planner' ? null : a.delegation,
    parts: { broadcast, marginal: 0, tool },
    total,
  }));
}

export function agentCredits(traj: Trajectory, inputs: TrajectoryRewardInputs, rule: RewardRule): AgentCredit[] {
  if (rule.kind === 'broadcast') return broadcastCredits(traj, inputs.broadcast, 0, inputs.broadcast);
  if (rule.kind === 'oracle') {
    return traj.agents.map((a) => {
      const marginal = a.role === 'planner' ? 0 : (inputs.workerMarginal[a.delegation ?? -1] ?? 0);
      const total = a.role === 'planner' ? inputs.broadcast : marginal;
      return {
        trajectoryId: traj.id,
        agent: a.id,
        role: a.role,
        delegation: a.role === 'planner' ? null : a.delegation,
        parts: { broadcast: inputs.broadcast, marginal, tool: 0 },
        total,
      };
    });
  }
  if (rule.kind === 'matpo')
    return broadcastCredits(
      traj,
      inputs.broadcast,
      rule.format,
      rule.accuracy * inputs.broadcast + rule.formatWeight * rule.format,
    );
  const { weights, toolGate } = rule;
  if (inputs.tool.length !== traj.agents.length) {
    throw new Error(`trajectory ${traj.id}: ${inputs.tool.length} tool rewards for ${traj.agents.length} agents`);
  }
  const gateOpen = !toolGate || inputs.broadcast > 0;
  return traj.agents.map((a) => {
    let marginal: number;
    if (a.role === 'planner') marginal = inputs.plannerMarginal;
    else {
      const d = a.delegation;
      if (d === null || d < 0 || d >= inputs.workerMarginal.length)
        throw new Error(
          `trajectory ${traj.id}: worker agent ${a.id} has delegation ${String(d)} outside ` +
            `0..${inputs.workerMarginal.length - 1}`,
        );
      marginal = inputs.workerMarginal[d];
    }
    const parts = { broadcast: inputs.broadcast, marginal, tool: gateOpen ? inputs.tool[a.id] : 0 };
    const total = weights.broadcast * parts.broadcast + weights.marginal * parts.marginal + weights.tool * parts.tool;
    return {
      trajectoryId: traj.id,
      agent: a.id,
      role: a.role,
      delegation: a.role === 'planner' ? null : a.delegation,
      parts,
      total,
    };
  });
}
