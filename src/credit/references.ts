import type { Episode, SubQuestion } from '../data/episode.ts';
import { UserError } from '../errors.ts';
import type { Trajectory } from '../rollout/types.ts';
import { assignHop, judgeDelegation, resolveHopQuestion } from './judges/rule.ts';
import type { SuccessFn } from './success.ts';

/**
 * What the gold decomposition says about each delegation of a trajectory (the rule judge's view,
 * judges/rule.ts): the hop its subtask asks, whether the planner asked it right, the reference
 * report a right worker would have given (the hop's gold sub-answer, exactly what the engine hands
 * the planner as a report: a worker's answer), and whether the recorded report was right. The
 * `repair` counterfactual substitutes these references, the `oracle` ceiling rewards by them, and
 * the credit audit labels worker calls with them (docs/architecture.md, "Credit").
 */
export interface DelegationReference {
  delegation: number;
  /** Index of the gold hop the subtask asks (assignHop), null when it asks none. */
  hop: number | null;
  /** The planner's subtask: +1 names everything its hop names, -1 misses one (wrong entity), 0 not judged. */
  delegationLabel: -1 | 0 | 1;
  /** The hop's gold question with its references resolved (the repaired subtask); null without a hop. */
  goldSubtask: string | null;
  /** The hop's gold sub-answer: the reference report; null without a hop. */
  reference: string | null;
  /** The recorded report (the worker's answer; null when it gave none, or no worker ran). */
  report: string | null;
  /** Whether the recorded report matches the reference; null without a hop. */
  reportRight: boolean | null;
}

/** The decomposition of an episode, or a one-line error naming what needs it. */
export function goldHops(episode: Episode, what: string): SubQuestion[] {
  if (!episode.decomposition || episode.decomposition.length === 0) {
    throw new UserError(
      `${what} needs a gold decomposition (question_decomposition), and episode ${episode.id} has none; use data ` +
        `with decompositions (the synthetic world, MuSiQue) or another counterfactual`,
    );
  }
  return episode.decomposition;
}

export function delegationReferences(
  traj: Trajectory,
  episode: Episode,
  o: { what: string; hopMatchF1: number; match: SuccessFn },
): DelegationReference[] {
  const hops = goldHops(episode, o.what);
  const out: DelegationReference[] = [];
  for (const a of traj.agents) {
    if (a.role !== 'worker' || a.delegation === null) continue;
    const subtask = a.subtask ?? '';
    const hop = assignHop(subtask, hops, o.hopMatchF1);
    const reference = hop === null ? null : hops[hop].answer;
    out.push({
      delegation: a.delegation,
      hop,
      delegationLabel: judgeDelegation(subtask, hops, hop),
      goldSubtask: hop === null ? null : resolveHopQuestion(hops, hop),
      reference,
      report: a.answer,
      reportRight: reference === null ? null : o.match(a.answer, [reference]) > 0,
    });
  }
  return out.sort((x, y) => x.delegation - y.delegation);
}
