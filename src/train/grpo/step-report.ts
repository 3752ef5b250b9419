import type { Config } from '../../config/schema.ts';
import type { CreditedGroup } from '../../credit/credited.ts';
import { reportInputs } from '../../credit/credited.ts';
import type { PreferencePair } from '../../credit/first-error.ts';
import type { GroupPlan } from '../../credit/plan.ts';
import { creditReport, reportMetrics } from '../../credit/report.ts';
import {
  creditHeader,
  groupRecord,
  RECORD_VERSION,
  ReplayAnswers,
  sampleGroups,
  type StepRecord,
} from '../../credit/record.ts';
import type { StepCredit } from '../../credit/assign.ts';
import type { OutcomeFn } from '../../credit/outcome.ts';
import type { Trajectory } from '../../rollout/types.ts';
import type { RolledOut } from './types.ts';

/**
 * What a step reports besides its update, the same whichever stages generated it (in process or
 * on workers): the rollout and credit metrics, and the viewer's sample of its groups
 * (src/credit/record.ts).
 */
export interface StepOutput {
  groups: CreditedGroup[];
  /** Failure-path preference pairs (credit.failurePairs), mixed in with train.dpoWeight. */
  pairs: PreferencePair[];
  /** Metrics of the rollout and credit stages, namespaced. */
  metrics: Record<string, number>;
  /** A sample of the step's trajectories with their credit, written for `sharp view` (its step is set in loop.ts). */
  record?: StepRecord;
}

export function stepReport(
  credit: Config['credit'],
  rolled: RolledOut,
  plans: readonly GroupPlan[],
  replayed: readonly (readonly Trajectory[])[],
  c: StepCredit,
  seconds: { generateS: number; creditS: number },
  outcome?: OutcomeFn,
): StepOutput {
  const credited = c.groups.flatMap((g) => g.trajectories);
  const trajectories = credited.map((ct) => ct.trajectory);
  const { summaries, credits } = reportInputs(credited);
  const agentsPerTraj = trajectories.map((t) => t.agents.length);
  const calls = trajectories.flatMap((t) => t.messages.flatMap((m) => m.toolCalls));
  const metrics = {
    ...reportMetrics(creditReport(summaries, credits)),
    'rollout/trajectories': trajectories.length,
    'rollout/agents_mean': agentsPerTraj.reduce((a, k) => a + k, 0) / Math.max(1, agentsPerTraj.length),
    'rollout/generated_tokens': trajectories.reduce(
      (a, t) => a + t.messages.reduce((b, m) => b + m.tokenIds.length, 0),
      0,
    ),
    'perf/generate_s': seconds.generateS,
    'perf/credit_s': seconds.creditS,
    'rollout/policy_calls': rolled.policyCalls,
    'rollout/max_batch': rolled.maxBatch,
    // Fraction of tool calls that failed to parse, named a tool the role may not use, or errored.
    'rollout/invalid_calls': calls.length === 0 ? 0 : calls.filter((x) => !x.valid).length / calls.length,
    'credit/replays': c.replayItems,
    'credit/cached_coalitions': c.cachedCoalitions,
  };
  let record: StepRecord | undefined;
  if (credit.recordGroups > 0) {
    const recorded = plans.map((plan, q) =>
      groupRecord(
        plan.episode,
        c.groups[q].trajectories,
        new ReplayAnswers(plan, replayed[q], outcome),
        credit,
        c.pairs,
      ),
    );
    record = {
      version: RECORD_VERSION,
      kind: 'train',
      step: 0,
      credit: creditHeader(credit),
      groupsTotal: plans.length,
      groups: sampleGroups(recorded, credit.recordGroups),
    };
  }
  return { groups: c.groups, pairs: c.pairs, metrics, record };
}
