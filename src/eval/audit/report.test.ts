import { describe, expect, it } from 'vitest';
import type { AurocEstimate, BlamedShare } from '../credit-quality.ts';
import type { CallCounts, CreditQuality } from './quality.ts';
import { AUDIT_KIND, auditMarkdown, type AuditReport } from './report.ts';

const roc = (
  auroc: number | null,
  low: number | null,
  high: number | null,
  positives = 3,
  negatives = 4,
): AurocEstimate => ({ auroc, low, high, positives, negatives, clusters: 2, draws: auroc === null ? 0 : 100 });
const share = (blamed: number, calls: number): BlamedShare => ({
  blamed,
  calls,
  share: calls === 0 ? null : blamed / calls,
});
const counts: CallCounts = { calls: 8, right: 4, wrong: 3, unjudged: 1, planted: 1 };
const quality = (failure: AurocEstimate): CreditQuality => ({
  auroc: { failure, success: roc(null, null, null, 0, 2), overall: roc(0.625, 0.5, 0.875) },
  blamed: {
    wrong: { failure: share(1, 2), success: share(0, 0), overall: share(1, 2) },
    right: { failure: share(0, 2), success: share(1, 3), overall: share(1, 5) },
    planted: { failure: share(1, 1), success: share(0, 0), overall: share(1, 1) },
  },
});
const report: AuditReport = {
  kind: AUDIT_KIND,
  version: 1,
  setup: {
    model: 'models/m',
    modelHash: 'h',
    config: 'c.yaml',
    n: 4,
    seed: 0,
    reps: 100,
    temperature: 1,
    replayTemperature: null,
    replays: 2,
    replayMode: 'replan',
    success: 'em',
    hopMatchF1: 0.5,
  },
  trajectories: 4,
  successes: 2,
  calls: { failure: counts, success: counts, overall: counts },
  rolloutSeconds: 1.25,
  arms: [
    {
      name: 'mask',
      method: 'loo',
      counterfactual: 'mask',
      ceiling: false,
      quality: quality(roc(0.5, 0.25, 0.75)),
      noise: 0.125,
      replays: 26,
      seconds: 2.04,
    },
    {
      name: 'oracle',
      method: 'oracle',
      counterfactual: 'mask',
      ceiling: true,
      quality: quality(roc(1, 1, 1)),
      noise: 0,
      replays: 0,
      seconds: 0,
    },
  ],
};

describe('auditMarkdown', () => {
  const md = auditMarkdown(report);
  it('one row per credit: AUROC [interval] per stratum, n/a with the class counts where one class is missing', () => {
    expect(md).toContain(
      '| loo + mask | 0.50 [0.25, 0.75] | n/a (0 wrong, 2 right) | 0.63 [0.50, 0.88] | 0.125 | 26 | 2.0 |',
    );
    expect(md).toContain(
      '| oracle (ceiling) | 1.00 [1.00, 1.00] | n/a (0 wrong, 2 right) | 0.63 [0.50, 0.88] | 0.000 | 0 | 0.0 |',
    );
  });

  it('blamed shares with their counts, n/a where there are no calls; the ceiling explained', () => {
    expect(md).toContain('| loo + mask | 0.50 (1/2) | n/a | 0.00 (0/2) | 0.33 (1/3) | 1.00 (1/1) | n/a |');
    expect(md).toContain('worker calls: 8 (3 wrong, 4 right, 1 unjudged, 1 planted)');
    expect(md).toContain('replay temperature 1');
    expect(md).toContain('The oracle is a ceiling, not a credit');
  });
});
