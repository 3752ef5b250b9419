import type { Config } from '../../config/schema.ts';
import { creditReport, reportMetrics, type TrajectoryCreditSummary } from '../../credit/report.ts';
import { creditHeader, RECORD_VERSION, sampleGroups, type GroupRecord, type StepRecord } from '../../credit/record.ts';
import type { AgentCredit } from '../../credit/reward.ts';
import type { Trajectory } from '../../rollout/types.ts';

/**
 * What a collect stage reports besides its groups, the same whether the step ran in this process
 * (collect.ts) or as distributed units (src/distributed): the metrics of the step and the viewer's
 * sample of its groups (src/credit/record.ts).
 */
export interface CollectCounts {
  /** Seconds spent generating the rollouts, and on credit (counterfactual replays included). */
  generateS: number;
  creditS: number;
  policyCalls: number;
  maxBatch: number;
  replayItems: number;
  cachedCoalitions: number;
}

export function collectMetrics(trajectories: readonly Trajectory[], summaries: readonly TrajectoryCreditSummary[], credits: readonly AgentCredit[], n: CollectCounts): Record<string, number> {
  const agentsPerTraj = trajectories.map((t) => t.agents.length);
  const calls = trajectories.flatMap((t) => t.messages.flatMap((m) => m.toolCalls));
  return {
    ...reportMetrics(creditReport(summaries, credits)),
    'rollout/trajectories': trajectories.length,
    'rollout/agents_mean': agentsPerTraj.reduce((a, k) => a + k, 0) / Math.max(1, agentsPerTraj.length),
    'rollout/generated_tokens': trajectories.reduce((a, t) => a + t.messages.reduce((b, m) => b + m.tokenIds.length, 0), 0),
    'perf/generate_s': n.generateS,
    'perf/credit_s': n.creditS,
    'rollout/policy_calls': n.policyCalls,
    'rollout/max_batch': n.maxBatch,
    // Fraction of tool calls that failed to parse, named a tool the role may not use, or errored.
    'rollout/invalid_calls': calls.length === 0 ? 0 : calls.filter((c) => !c.valid).length / calls.length,
    'credit/replays': n.replayItems,
    'credit/cached_coalitions': n.cachedCoalitions,
  };
}

/** The step's record for `sharp view` from its recorded groups (the loop sets its step when writing it). */
export function trainRecord(credit: Config['credit'], recorded: readonly GroupRecord[], groupsTotal: number): StepRecord {
  return { version: RECORD_VERSION, kind: 'train', step: 0, credit: creditHeader(credit), groupsTotal, groups: sampleGroups(recorded, credit.recordGroups) };
}
