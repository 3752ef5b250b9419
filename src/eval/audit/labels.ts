import { delegationReferences } from '../../credit/references.ts';
import type { SuccessFn } from '../../credit/success.ts';
import type { Episode } from '../../data/episode.ts';
import type { Trajectory } from '../../rollout/types.ts';
import { plantedWrong, repeatsPlanted } from '../planted.ts';

/**
 * The worker calls of the credit audit, labelled without any credit (docs/credit-audit.md): whether
 * the report is right or wrong by the rule judge (it matches the gold sub-answer of the hop its
 * subtask asks, credit/references.ts), whether it repeats the episode's planted wrong claim
 * (planted.ts), and whether the trajectory succeeded. A call whose subtask asks no gold hop is
 * unjudged (right = null): the audit leaves it out of the AUROC and the blamed shares.
 */
export interface WorkerCall {
  /** Index of the trajectory among the audited ones: the bootstrap's cluster. */
  trajectory: number;
  trajectoryId: string;
  episodeId: string;
  /** The delegation that spawned the worker (credit's workerMarginal is indexed by it). */
  delegation: number;
  /** The recorded outcome R(tau) is > 0. */
  success: boolean;
  /** The report matches its hop's gold sub-answer; null: the subtask asks no gold hop (unjudged). */
  right: boolean | null;
  /** The report repeats the episode's planted wrong claim. */
  planted: boolean;
  hop: number | null;
  report: string | null;
  reference: string | null;
}

export interface LabelOptions {
  /** credit.hopMatchF1: the token F1 a subtask needs with a gold hop question. */
  hopMatchF1: number;
  /** The success function (credit.success): of the outcome, and of a report against its reference. */
  match: SuccessFn;
}

/** The labelled worker calls of one trajectory (`index`: its position among the audited ones), in delegation order. */
export function labelWorkerCalls(traj: Trajectory, episode: Episode, index: number, o: LabelOptions): WorkerCall[] {
  const success = o.match(traj.finalAnswer, episode.answers) > 0;
  const wrong = plantedWrong(episode);
  return delegationReferences(traj, episode, {
    what: 'the credit audit',
    hopMatchF1: o.hopMatchF1,
    match: o.match,
  }).map((r) => ({
    trajectory: index,
    trajectoryId: traj.id,
    episodeId: episode.id,
    delegation: r.delegation,
    success,
    right: r.reportRight,
    planted: repeatsPlanted(r.report, wrong),
    hop: r.hop,
    report: r.report,
    reference: r.reference,
  }));
}
