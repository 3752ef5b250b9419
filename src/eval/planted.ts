import { normalizeAnswer } from '../data/answers/squad.ts';
import type { Episode } from '../data/episode.ts';
import { plantedOf } from '../data/synth/record.ts';
import type { Trajectory } from '../rollout/types.ts';

/**
 * How often workers repeat a planted wrong claim (src/data/synth/misleading.ts): over every worker
 * call (one worker agent per executed delegation) of the trajectories, the share whose report equals
 * its episode's planted wrong value after SQuAD normalisation. A value that is also a gold hop answer
 * of the episode is never counted (a worker could be reporting it rightly for another hop). Episodes
 * without a planted claim contribute their calls to the denominator only: the share is of all worker
 * calls, the figure a harmful-call rate is quoted as.
 */
export interface PlantedReports {
  /** Worker calls in the trajectories. */
  calls: number;
  /** Of them, reports equal to the planted wrong value. */
  planted: number;
  /** planted / calls, or null when there are no worker calls. */
  share: number | null;
}

export function plantedReports(trajectories: readonly Trajectory[], episodes: readonly Episode[]): PlantedReports {
  return plantedTotal(plantedByEpisode(trajectories, episodes));
}

/** The totals of per-episode counts (plantedByEpisode). */
export function plantedTotal(byEpisode: ReadonlyMap<string, { calls: number; planted: number }>): PlantedReports {
  let calls = 0;
  let planted = 0;
  for (const q of byEpisode.values()) {
    calls += q.calls;
    planted += q.planted;
  }
  return { calls, planted, share: calls === 0 ? null : planted / calls };
}

/**
 * The episode's planted wrong value, SQuAD-normalised, or null when it has none or the value is also
 * a gold hop answer (a worker could be reporting it rightly for another hop).
 */
export function plantedWrong(ep: Episode): string | null {
  const claim = plantedOf(ep);
  const gold = new Set((ep.decomposition ?? []).map((h) => normalizeAnswer(h.answer)));
  return claim && !gold.has(normalizeAnswer(claim.wrong)) ? normalizeAnswer(claim.wrong) : null;
}

/** Whether a worker's report repeats the planted wrong value (`wrong` from plantedWrong). */
export function repeatsPlanted(answer: string | null, wrong: string | null): boolean {
  return wrong !== null && answer !== null && normalizeAnswer(answer) === wrong;
}

/** The same counts per episode (every episode of `episodes`, in their order; 0 calls where none ran). */
export function plantedByEpisode(
  trajectories: readonly Trajectory[],
  episodes: readonly Episode[],
): Map<string, { calls: number; planted: number }> {
  const byId = new Map(episodes.map((e) => [e.id, e]));
  const wrongOf = new Map<string, string | null>();
  const out = new Map(episodes.map((e) => [e.id, { calls: 0, planted: 0 }]));
  for (const t of trajectories) {
    const ep = byId.get(t.episodeId);
    if (!ep)
      throw new Error(
        `plantedReports: trajectory ${t.id} is of episode ${t.episodeId}, which is not among the episodes`,
      );
    let wrong = wrongOf.get(ep.id);
    if (wrong === undefined) {
      wrong = plantedWrong(ep);
      wrongOf.set(ep.id, wrong);
    }
    const q = out.get(ep.id) as { calls: number; planted: number };
    for (const a of t.agents) {
      if (a.role !== 'worker') continue;
      q.calls++;
      if (repeatsPlanted(a.answer, wrong)) q.planted++;
    }
  }
  return out;
}
