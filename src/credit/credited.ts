import type { Trajectory } from '../rollout/types.ts';
import type { MessageReward } from './message-shares.ts';
import type { AgentCredit } from './reward.ts';

/**
 * What the credit stage hands the trainer: each trajectory with its agents' credit attached (reward
 * parts and total, one per agent, indexed by agent id) and, with credit.messageLevel, the signed
 * share of each judged message. Advantages and training sequences are built from it directly
 * (train/grpo/advantages.ts, train/batches/sequences.ts); it crosses the distributed jobs as it is (plain JSON).
 */
export interface CreditedTrajectory {
  trajectory: Trajectory;
  /** agents[i] is the credit of trajectory.agents[i]. */
  agents: AgentCredit[];
  /** credit.messageLevel: the shares of this trajectory's messages (absent without message-level credit). */
  messages?: MessageReward[];
}

/** The G credited trajectories of one question (a GRPO group). */
export interface CreditedGroup {
  trajectories: readonly CreditedTrajectory[];
}

/** Attaches each trajectory's agent credits and message shares; every agent must have exactly its own credit. */
export function creditedTrajectories(group: readonly Trajectory[], credits: readonly AgentCredit[], shares: readonly MessageReward[]): CreditedTrajectory[] {
  return group.map((trajectory) => {
    const mine = credits.filter((c) => c.trajectoryId === trajectory.id);
    const agents = trajectory.agents.map((a) => {
      const c = mine.find((x) => x.agent === a.id);
      if (!c) throw new Error(`credit: no credit for trajectory ${trajectory.id} agent ${a.id}`);
      if (c.role !== a.role) throw new Error(`credit: the credit of trajectory ${trajectory.id} agent ${a.id} is for a ${c.role}, the agent is a ${a.role}`);
      return c;
    });
    const messages = shares.filter((m) => m.trajectoryId === trajectory.id);
    return messages.length > 0 ? { trajectory, agents, messages } : { trajectory, agents };
  });
}
