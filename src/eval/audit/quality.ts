import { type AurocEstimate, type BlamedShare, blamedShare, clusteredAuroc, type Scored } from '../credit-quality.ts';
import type { BootstrapOptions } from '../paired-bootstrap.ts';
import type { WorkerCall } from './labels.ts';

/**
 * What one credit says about the labelled worker calls (docs/credit-audit.md): the AUROC of -credit
 * for "wrong" (a credit that tells right from wrong ranks wrong reports lowest) in failed
 * trajectories, in successful ones and over all, each with its bootstrap interval over trajectories;
 * and the share of wrong, right and planted reports it blames (credit < 0). Unjudged calls are left out.
 */
export type Stratum = 'failure' | 'success' | 'overall';

export interface CreditQuality {
  auroc: Record<Stratum, AurocEstimate>;
  blamed: {
    wrong: Record<Stratum, BlamedShare>;
    right: Record<Stratum, BlamedShare>;
    planted: Record<Stratum, BlamedShare>;
  };
}

const inStratum = (c: WorkerCall, s: Stratum): boolean => s === 'overall' || c.success === (s === 'success');

/** `credits[i]` is the credit of `calls[i]` (the worker's marginal: LOO Delta, or the oracle's 1 / 0). */
export function creditQuality(
  calls: readonly WorkerCall[],
  credits: readonly number[],
  opts: BootstrapOptions,
): CreditQuality {
  if (credits.length !== calls.length)
    throw new Error(`credit quality: ${credits.length} credits for ${calls.length} calls`);
  const judged = calls.map((c, i) => ({ c, credit: credits[i] as number })).filter((x) => x.c.right !== null);
  const per = <T>(f: (s: Stratum) => T): Record<Stratum, T> => ({
    failure: f('failure'),
    success: f('success'),
    overall: f('overall'),
  });
  const auroc = per((s) => {
    // One cluster per trajectory: its calls share the outcome and the replays.
    const clusters = new Map<number, Scored[]>();
    for (const { c, credit } of judged) {
      if (!inStratum(c, s)) continue;
      const list = clusters.get(c.trajectory) ?? [];
      list.push({ score: -credit, positive: c.right === false });
      clusters.set(c.trajectory, list);
    }
    return clusteredAuroc([...clusters.values()], opts);
  });
  const share = (keep: (c: WorkerCall) => boolean): Record<Stratum, BlamedShare> =>
    per((s) => blamedShare(judged.filter((x) => keep(x.c) && inStratum(x.c, s)).map((x) => x.credit)));
  return {
    auroc,
    blamed: {
      wrong: share((c) => c.right === false),
      right: share((c) => c.right === true),
      planted: share((c) => c.planted),
    },
  };
}

/** Counts of the labelled calls: judged right / wrong, unjudged, planted, per stratum. */
export interface CallCounts {
  calls: number;
  right: number;
  wrong: number;
  unjudged: number;
  planted: number;
}

export function callCounts(calls: readonly WorkerCall[]): Record<Stratum, CallCounts> {
  const count = (s: Stratum): CallCounts => {
    const c = calls.filter((x) => inStratum(x, s));
    return {
      calls: c.length,
      right: c.filter((x) => x.right === true).length,
      wrong: c.filter((x) => x.right === false).length,
      unjudged: c.filter((x) => x.right === null).length,
      planted: c.filter((x) => x.planted).length,
    };
  };
  return { failure: count('failure'), success: count('success'), overall: count('overall') };
}
