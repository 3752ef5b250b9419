import { collectMetrics, trainRecord } from '../train/grpo/collect-output.ts';
import type { Collected } from '../train/grpo/types.ts';
import type { CreditConfig, GroupOutcome } from './units.ts';

/** The step's Collected from its group outcomes (question order), with the metrics and record of the in-process collect. */
export function assemble(outcomes: readonly GroupOutcome[], seconds: { generate: number; credit: number }, credit: CreditConfig): Collected {
  const recorded = outcomes.flatMap((o) => (o.record ? [o.record] : []));
  return {
    groups: outcomes.map((o) => ({ trajectories: o.credited })),
    pairs: outcomes.flatMap((o) => o.pairs),
    record: credit.recordGroups > 0 ? trainRecord(credit, recorded, outcomes.length) : undefined,
    metrics: collectMetrics(
      outcomes.flatMap((o) => o.credited.map((ct) => ct.trajectory)),
      outcomes.flatMap((o) => o.summaries),
      outcomes.flatMap((o) => o.credited.flatMap((ct) => ct.agents)),
      {
        generateS: seconds.generate,
        creditS: seconds.credit,
        policyCalls: outcomes.reduce((a, o) => a + o.policyCalls, 0),
        maxBatch: outcomes.reduce((a, o) => Math.max(a, o.maxBatch), 0),
        replayItems: outcomes.reduce((a, o) => a + o.replayItems, 0),
        cachedCoalitions: outcomes.reduce((a, o) => a + o.cachedCoalitions, 0),
      },
    ),
  };
}
