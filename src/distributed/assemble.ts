import { creditReport, reportMetrics } from '../credit/report.ts';
import type { Collected } from '../train/grpo/types.ts';
import type { GroupOutcome } from './units.ts';

/** The step's Collected from its group outcomes (question order), with the metrics of the in-process collect. */
export function assemble(outcomes: readonly GroupOutcome[], seconds: { generate: number; credit: number }): Collected {
  const trajectories = outcomes.flatMap((o) => o.trajectories);
  const report = creditReport(
    outcomes.flatMap((o) => o.summaries),
    outcomes.flatMap((o) => o.credits),
  );
  const agents = trajectories.map((t) => t.agents.length);
  return {
    groups: outcomes.map((o) => ({ trajectories: o.trajectories, credits: o.credits })),
    pairs: outcomes.flatMap((o) => o.pairs),
    metrics: {
      ...reportMetrics(report),
      'rollout/trajectories': trajectories.length,
      'rollout/agents_mean': agents.reduce((a, n) => a + n, 0) / Math.max(1, agents.length),
      'rollout/generated_tokens': trajectories.reduce((a, t) => a + t.messages.reduce((b, m) => b + m.tokenIds.length, 0), 0),
      'perf/generate_s': seconds.generate,
      'perf/credit_s': seconds.credit,
      'rollout/policy_calls': outcomes.reduce((a, o) => a + o.policyCalls, 0),
      'rollout/max_batch': outcomes.reduce((a, o) => Math.max(a, o.maxBatch), 0),
      'credit/replays': outcomes.reduce((a, o) => a + o.replayItems, 0),
      'credit/cached_coalitions': outcomes.reduce((a, o) => a + o.cachedCoalitions, 0),
    },
  };
}
