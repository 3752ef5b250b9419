/**
 * Turns one trajectory into the benchmark-neutral Prediction `sharp eval` records (* "support idxs from the paragraphs
 * the workers retrieved and cited").
 *
 * Whose retrievals count: the agents whose answer reached the final answer. In a planner + workers
 * trajectory those are the workers whose report the planner received (a delegation that ran and
 * answered; masked or failed reports carry no evidence); in a single-agent trajectory, the root agent.
 *
 * What "cited" means: an agent answers with a short string; the paragraphs it retrieved that state
 * that answer (SQuAD-normalised substring, the normalisation the metric uses) are the ones it cited.
 * When none states it (an answer computed with `calculate`, or paraphrased), the top result of the
 * agent's last search stands in: it is what the agent read last before answering.
 */
import type { Episode } from '../../data/episode.ts';
import type { AgentRecord, Trajectory } from '../../rollout/types.ts';
import { normalizeAnswer } from '../../data/answers/squad.ts';
import type { Prediction } from '../types.ts';

/** Agents whose answers were delivered into the final answer: reported workers, or the lone root agent. */
export function answeringAgents(traj: Trajectory): AgentRecord[] {
  const workers = traj.agents.filter((a) => a.role === 'worker');
  if (workers.length === 0) return traj.agents.slice(0, 1).filter((a) => a.answer !== null);
  const reported = new Set<number>();
  for (const m of traj.messages) {
    for (const c of m.toolCalls)
      if (c.name === 'delegate' && c.valid && !c.masked && c.workerAgent !== undefined) reported.add(c.workerAgent);
  }
  return workers.filter((a) => reported.has(a.id) && a.answer !== null);
}

/** Paragraph idx cited by one agent (see the module comment), in first-retrieved order. */
export function citedIdx(traj: Trajectory, agent: AgentRecord, episode: Episode): number[] {
  const byIdx = new Map(episode.paragraphs.map((p) => [p.idx, p]));
  const searches = traj.messages
    .filter((m) => m.agent === agent.id)
    .flatMap((m) => m.toolCalls)
    .filter((c) => c.name === 'search' && c.valid && (c.retrievedIdx?.length ?? 0) > 0);
  if (searches.length === 0 || agent.answer === null) return [];
  const answer = normalizeAnswer(agent.answer);
  const retrieved = [...new Set(searches.flatMap((c) => c.retrievedIdx ?? []))].filter((i) => byIdx.has(i));
  if (answer.length > 0) {
    const stating = retrieved.filter((i) => {
      const p = byIdx.get(i);
      return p !== undefined && normalizeAnswer(`${p.title} ${p.text}`).includes(answer);
    });
    if (stating.length > 0) return stating;
  }
  const top = searches[searches.length - 1].retrievedIdx?.[0];
  return top !== undefined && byIdx.has(top) ? [top] : [];
}

/**
 * The prediction of one trajectory. `answerable` is false only when the system gave no answer at
 * all (MuSiQue full scores it; the agents have no separate "unanswerable" action).
 */
export function predictionOf(traj: Trajectory, episode: Episode): Prediction {
  if (traj.episodeId !== episode.id)
    throw new Error(`predictionOf: trajectory ${traj.id} is for episode ${traj.episodeId}, not ${episode.id}`);
  const answer = (traj.finalAnswer ?? '').trim();
  const support = new Set<number>();
  for (const a of answeringAgents(traj)) for (const i of citedIdx(traj, a, episode)) support.add(i);
  return {
    id: episode.id,
    answer,
    supportIdx: [...support].sort((x, y) => x - y),
    answerable: answer.length > 0,
    retrievedIdx: retrievedIdxOf(traj, episode),
  };
}

/** Episode paragraph idx returned by any valid search of any agent, in first-retrieved order. */
function retrievedIdxOf(traj: Trajectory, episode: Episode): number[] {
  const known = new Set(episode.paragraphs.map((p) => p.idx));
  const out = new Set<number>();
  for (const m of traj.messages)
    for (const c of m.toolCalls)
      if (c.name === 'search' && c.valid) for (const i of c.retrievedIdx ?? []) if (known.has(i)) out.add(i);
  return [...out];
}
