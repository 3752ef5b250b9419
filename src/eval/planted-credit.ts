import type { StepRecord } from '../credit/record.ts';
import type { Episode } from '../data/episode.ts';
import { plantedWrong, repeatsPlanted } from './planted.ts';

/**
 * What the counterfactual credit did with the worker calls that repeated a planted claim, read from
 * the recorded training steps (`<run>/trajectories/`): for planted and other worker calls, in
 * successful and in failed trajectories, how many there were and the mean and signs of their
 * marginal credit (LOO Delta, and Shapley phi where recorded). A credit arm can only teach a worker
 * to stop repeating the rumour when those calls get a negative Delta where the others do not.
 */
export interface CallCredit {
  calls: number;
  /** Mean LOO Delta of the calls (0 when none). */
  meanDelta: number;
  /** Calls with Delta < 0 and with Delta > 0. */
  negative: number;
  positive: number;
  /** Mean Shapley phi over the calls that have one (null when none has). */
  meanPhi: number | null;
}

export interface PlantedCredit {
  planted: { success: CallCredit; failure: CallCredit };
  other: { success: CallCredit; failure: CallCredit };
}

interface Acc {
  calls: number;
  delta: number;
  negative: number;
  positive: number;
  phi: number;
  phis: number;
}

const empty = (): Acc => ({ calls: 0, delta: 0, negative: 0, positive: 0, phi: 0, phis: 0 });
const done = (a: Acc): CallCredit => ({
  calls: a.calls,
  meanDelta: a.calls ? a.delta / a.calls : 0,
  negative: a.negative,
  positive: a.positive,
  meanPhi: a.phis ? a.phi / a.phis : null,
});

/** The recorded steps of one run and the episodes they were sampled from. */
export interface RecordedRun {
  records: readonly StepRecord[];
  episodes: readonly Episode[];
}

/** The counts over every worker call of the runs' recorded steps (one run, or several pooled). */
export function plantedCredit(runs: readonly RecordedRun[]): PlantedCredit {
  const acc = { planted: { success: empty(), failure: empty() }, other: { success: empty(), failure: empty() } };
  for (const run of runs) addRun(acc, run);
  return {
    planted: { success: done(acc.planted.success), failure: done(acc.planted.failure) },
    other: { success: done(acc.other.success), failure: done(acc.other.failure) },
  };
}

function addRun(
  acc: Record<'planted' | 'other', Record<'success' | 'failure', Acc>>,
  { records, episodes }: RecordedRun,
): void {
  const byId = new Map(episodes.map((e) => [e.id, e]));
  for (const rec of records) {
    for (const g of rec.groups) {
      const ep = byId.get(g.episodeId);
      if (!ep)
        throw new Error(
          `plantedCredit: step ${rec.step} records episode ${g.episodeId}, which is not among the episodes`,
        );
      const wrong = plantedWrong(ep);
      for (const t of g.trajectories) {
        for (const a of t.agents) {
          if (a.role !== 'worker' || a.delegation === null) continue;
          const cell =
            acc[repeatsPlanted(a.answer, wrong) ? 'planted' : 'other'][t.success > 0 ? 'success' : 'failure'];
          const d = t.deltas[a.delegation] ?? 0;
          cell.calls++;
          cell.delta += d;
          if (d < 0) cell.negative++;
          if (d > 0) cell.positive++;
          const phi = t.phi?.[a.delegation];
          if (phi !== undefined) {
            cell.phi += phi;
            cell.phis++;
          }
        }
      }
    }
  }
}
