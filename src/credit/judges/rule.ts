import type { Episode, SubQuestion } from '../../data/episode.ts';
import type { Trajectory } from '../../rollout/types.ts';
import type { Label } from '../message-shares.ts';
import { f1Score, normalizeAnswer } from '../../data/answers/squad.ts';
import { emSuccess, type SuccessFn } from '../success.ts';
import type { Judge, JudgeContext } from './types.ts';

/**
 * Rule judge over the gold decomposition (MuSiQue `question_decomposition`):
 * - a planner's delegation is assigned to a hop like a report (below); it is right when its subtask
 *   names everything the hop's question names: the gold answers of the hops it refers to (`#k`) and
 *   its capitalised words after the first (the entity the question gives), wrong when it misses one
 *   (it asks about the wrong entity); a delegation of no hop, or of a hop that names nothing, is
 *   neither. Template words may differ (a paraphrase is not an error); an alternative replacing a
 *   wrong delegation must also be closer to the hop's gold question (token F1) than the original;
 * - a worker's report is right when it matches the gold sub-answer of its hop, wrong when it does
 *   not; a worker whose subtask matches no hop (an irrelevant delegation) is neither;
 * - the planner's final answer is right when it matches the gold answer (or an alias);
 * - a prefix has failed once it contains a wrong delegation, report or final answer, or the
 *   planner's last message when it ended without answering (monotone by construction).
 * A worker's hop is the hop whose question, with `#k` replaced by the gold answer of hop k, has the
 * highest token F1 with the subtask, if that F1 reaches `hopMatchF1`.
 */
export interface RuleJudgeOptions {
  /** Reads the final answer out of an alternative message's text (the rollout protocol's parser). */
  parseAnswer: (text: string) => string | null;
  /**
   * Reads the subtask of a delegation out of an alternative message's text; without it no alternative delegation is
   * accepted.
   */
  parseDelegation?: (text: string) => string | null;
  /** Match of a report against a gold answer list (default: SQuAD EM). */
  match?: SuccessFn;
  /** Token F1 a subtask needs with a hop question to be assigned to that hop (default 0.5). */
  hopMatchF1?: number;
}

/** Hop question with `#k` references resolved to gold answers (MuSiQue convention, 1-based). */
export function resolveHopQuestion(hops: readonly SubQuestion[], i: number): string {
  return hops[i].question.replace(/#(\d+)/g, (ref, k: string) => hops[Number(k) - 1]?.answer ?? ref);
}

/** Index of the hop a subtask asks, or null when it matches none well enough. */
export function assignHop(subtask: string, hops: readonly SubQuestion[], minF1: number): number | null {
  let best: number | null = null;
  let bestF1 = -1;
  hops.forEach((_, i) => {
    const f = f1Score(subtask, resolveHopQuestion(hops, i));
    if (f > bestF1) {
      bestF1 = f;
      best = i;
    }
  });
  return bestF1 >= minF1 ? best : null;
}

/**
 * Normalised tokens a subtask of hop i must contain: referenced gold answers and the question's capitalised words after
 * the first.
 */
export function hopNames(hops: readonly SubQuestion[], i: number): Set<string> {
  const out = new Set<string>();
  const q = hops[i].question;
  for (const m of q.matchAll(/#(\d+)/g)) for (const t of tokensOf(hops[Number(m[1]) - 1]?.answer ?? '')) out.add(t);
  const words = q.replace(/#\d+/g, ' ').split(/\s+/).filter(Boolean);
  for (const w of words.slice(1)) if (/^\p{Lu}/u.test(w)) for (const t of tokensOf(w)) out.add(t);
  return out;
}

const tokensOf = (text: string): string[] => normalizeAnswer(text).split(' ').filter(Boolean);

/** +1 when the subtask names every name of its hop, -1 when it misses one, 0 when not judged. */
export function judgeDelegation(subtask: string, hops: readonly SubQuestion[], hop: number | null): Label {
  if (hop === null) return 0;
  const need = hopNames(hops, hop);
  if (need.size === 0) return 0;
  const have = new Set(tokensOf(subtask));
  return [...need].every((t) => have.has(t)) ? 1 : -1;
}

type Verdict =
  | { kind: 'delegation'; hop: number | null; subtask: string }
  | { kind: 'report'; hop: number | null }
  | { kind: 'final' }
  | { kind: 'no_answer' }
  | { kind: 'other' };

/** What each assistant message is, for the rules above. */
function classify(traj: Trajectory, hops: readonly SubQuestion[], minF1: number): Map<number, Verdict> {
  const lastOf = new Map<number, number>();
  for (const m of traj.messages) if (m.chatRole === 'assistant') lastOf.set(m.agent, m.index);
  const out = new Map<number, Verdict>();
  for (const m of traj.messages) {
    if (m.chatRole !== 'assistant') continue;
    // A planner message whose delegate call spawned a worker: that worker's subtask.
    const call = m.toolCalls.find((c) => c.name === 'delegate' && c.valid && c.workerAgent !== undefined);
    const subtask = call?.workerAgent !== undefined ? traj.agents[call.workerAgent]?.subtask : undefined;
    out.set(
      m.index,
      subtask !== undefined ? { kind: 'delegation', hop: assignHop(subtask, hops, minF1), subtask } : { kind: 'other' },
    );
  }
  for (const a of traj.agents) {
    const last = lastOf.get(a.id);
    if (last === undefined) continue;
    if (a.role === 'planner') out.set(last, traj.finalAnswer === null ? { kind: 'no_answer' } : { kind: 'final' });
    else if (a.answer !== null) out.set(last, { kind: 'report', hop: assignHop(a.subtask ?? '', hops, minF1) });
  }
  return out;
}

export function ruleJudge(opts: RuleJudgeOptions): Judge {
  const match = opts.match ?? emSuccess;
  const minF1 = opts.hopMatchF1 ?? 0.5;
  const hopsOf = (episode: Episode): SubQuestion[] => {
    if (!episode.decomposition || episode.decomposition.length === 0)
      throw new Error(`rule judge: episode ${episode.id} has no question_decomposition`);
    return episode.decomposition;
  };
  /** +1 right, -1 wrong, 0 not judged, for message `index` carrying `answer`. */
  const judgeAnswer = (ctx: JudgeContext, v: Verdict, answer: string | null): Label => {
    if (v.kind === 'final') return match(answer, ctx.episode.answers) > 0 ? 1 : -1;
    if (v.kind === 'no_answer') return -1;
    if (v.kind === 'report' && v.hop !== null) return match(answer, [hopsOf(ctx.episode)[v.hop].answer]) > 0 ? 1 : -1;
    if (v.kind === 'delegation') return judgeDelegation(v.subtask, hopsOf(ctx.episode), v.hop);
    return 0;
  };
  const recordedAnswer = (ctx: JudgeContext, index: number, v: Verdict): string | null => {
    if (v.kind === 'final') return ctx.traj.finalAnswer;
    const agent = ctx.traj.agents[ctx.traj.messages[index].agent];
    return agent.answer;
  };
  const labels = (ctx: JudgeContext): Map<number, Label> => {
    const verdicts = classify(ctx.traj, hopsOf(ctx.episode), minF1);
    const out = new Map<number, Label>();
    // 0 is "not judged" here (a tool call, a subtask of no hop): left out, so it keeps its even share.
    for (const [index, v] of verdicts) {
      const label = judgeAnswer(ctx, v, recordedAnswer(ctx, index, v));
      if (label !== 0) out.set(index, label);
    }
    return out;
  };
  return {
    name: 'rule',
    async prefixFailed(ctx, end) {
      if (!Number.isInteger(end) || end < 0 || end >= ctx.traj.messages.length)
        throw new Error(
          `rule judge: prefix end ${end} outside messages 0..${ctx.traj.messages.length - 1} of ${ctx.traj.id}`,
        );
      for (const [index, label] of labels(ctx)) if (index <= end && label === -1) return true;
      return false;
    },
    async labelMessages(ctx) {
      return labels(ctx);
    },
    async acceptsAlternative(ctx, index, text) {
      const v = classify(ctx.traj, hopsOf(ctx.episode), minF1).get(index);
      if (!v) throw new Error(`rule judge: message ${index} of ${ctx.traj.id} is not a generated message`);
      // An alternative delegation must name what the original's hop names and be closer (token F1)
      // to that hop's gold question than the original: a right entity in a wrong template is no repair.
      if (v.kind === 'delegation') {
        const subtask = opts.parseDelegation?.(text) ?? null;
        if (subtask === null || v.hop === null) return false;
        const hops = hopsOf(ctx.episode);
        const gold = resolveHopQuestion(hops, v.hop);
        return judgeDelegation(subtask, hops, v.hop) === 1 && f1Score(subtask, gold) > f1Score(v.subtask, gold);
      }
      // An alternative to the final message of an agent that ended without answering is judged as an answer.
      const kind: Verdict = v.kind === 'no_answer' ? { kind: 'final' } : v;
      const answer = opts.parseAnswer(text);
      if (answer === null) return false;
      return judgeAnswer(ctx, kind, answer) === 1;
    },
  };
}
