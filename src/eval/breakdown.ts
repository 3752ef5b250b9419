import { normalizeAnswer } from '../data/answers/squad.ts';
import type { Episode, SubQuestion } from '../data/episode.ts';
import { substituteRefs } from '../data/synth/reader.ts';
import type { AgentsMode } from '../rollout/engine.ts';
import type { AgentRecord, Trajectory } from '../rollout/types.ts';

/**
 * Where a multi-agent system fails, stage by stage, on episodes with a gold decomposition (the
 * synthetic world, MuSiQue): the numbers behind one accuracy figure (docs/results.md reads them).
 *
 * A worker is matched to gold hop k when its subtask equals hop k's question with the `#j`
 * references filled by the GOLD answers (after SQuAD normalisation): the planner asked exactly the
 * right single-hop question. Then, per stage:
 * - subQuestion: gold hops (over all trajectories) that some worker was asked correctly;
 * - retrieval: matched workers of fact hops (hops with a support paragraph) whose searches returned
 *   that paragraph (a worker that never searched did not retrieve it);
 * - report: matched workers whose report equals the hop's gold answer;
 * - finalGivenReports: trajectories in which every hop had a matched worker with a correct report,
 *   whose final answer is correct (the planner's last step alone);
 * - invalidCalls: invalid tool calls over all tool calls, every agent;
 * - offPlan: worker calls matched to no hop (redundant duplicates of a hop count as matched).
 * Each rate carries its counts, so rates of different runs can be pooled or given intervals.
 */
export interface Rate {
  num: number;
  den: number;
  /** num / den, or null when den is 0. */
  rate: number | null;
}

export interface StageBreakdown {
  trajectories: number;
  accuracy: Rate;
  subQuestion: Rate;
  retrieval: Rate;
  report: Rate;
  finalGivenReports: Rate;
  invalidCalls: Rate;
  offPlan: Rate;
  /** subQuestion per hop position (1-based as MuSiQue numbers hops), for 2-4 hop questions. */
  subQuestionByHop: Rate[];
}

const rate = (num: number, den: number): Rate => ({ num, den, rate: den === 0 ? null : num / den });

/** Gold hop questions with the references filled by the gold answers, normalised. */
export function goldHopQuestions(decomposition: readonly SubQuestion[]): string[] {
  const answers = decomposition.map((h) => h.answer);
  return decomposition.map((h) => normalizeAnswer(substituteRefs(h.question, answers)));
}

/** The hop (0-based) a worker's subtask asks, or -1. */
export function matchHop(worker: Pick<AgentRecord, 'subtask'>, hopQuestions: readonly string[]): number {
  if (worker.subtask === undefined) return -1;
  return hopQuestions.indexOf(normalizeAnswer(worker.subtask));
}

/** Paragraph idx values the searches of `agent` returned. */
function retrievedBy(traj: Trajectory, agent: number): Set<number> {
  const out = new Set<number>();
  for (const m of traj.messages) {
    if (m.agent !== agent) continue;
    for (const c of m.toolCalls) for (const idx of c.retrievedIdx ?? []) out.add(idx);
  }
  return out;
}

/**
 * The breakdown of `trajectories` (multi-agent ones; a trajectory without workers counts only in
 * accuracy, invalid calls and the planner's hops as not asked). `success(answer, golds)` is the
 * success function the accuracy uses (credit.success). Episodes without a decomposition are skipped
 * for the stage rates but counted in accuracy. `agents` is the agent system that produced them
 * (default multi): single and direct cannot delegate, so no hop is counted as asked or not asked and
 * subQuestion has n = 0.
 */
export function stageBreakdown(
  trajectories: readonly Trajectory[],
  episodes: ReadonlyMap<string, Episode>,
  success: (answer: string | null, golds: readonly string[]) => number,
  opts: { agents?: AgentsMode } = {},
): StageBreakdown {
  const delegates = (opts.agents ?? 'multi') === 'multi';
  let correct = 0;
  let hops = 0;
  let asked = 0;
  let factWorkers = 0;
  let retrieved = 0;
  let matched = 0;
  let goodReports = 0;
  let allGood = 0;
  let allGoodCorrect = 0;
  let calls = 0;
  let invalid = 0;
  let workers = 0;
  let offPlan = 0;
  const byHop = [0, 1, 2, 3].map(() => ({ num: 0, den: 0 }));
  for (const traj of trajectories) {
    const ep = episodes.get(traj.episodeId);
    if (!ep) throw new Error(`breakdown: trajectory ${traj.id} is for unknown episode ${traj.episodeId}`);
    const ok = success(traj.finalAnswer, ep.answers);
    correct += ok;
    for (const m of traj.messages) {
      calls += m.toolCalls.length;
      invalid += m.toolCalls.filter((c) => !c.valid).length;
    }
    const d = ep.decomposition;
    if (!d || d.length === 0 || !delegates) continue;
    const questions = goldHopQuestions(d);
    const askedHop = d.map(() => false);
    const reportedHop = d.map(() => false);
    for (const w of traj.agents) {
      if (w.role !== 'worker') continue;
      workers++;
      const k = matchHop(w, questions);
      if (k < 0) {
        offPlan++;
        continue;
      }
      askedHop[k] = true;
      matched++;
      const hop = d[k] as SubQuestion;
      const reportOk = w.answer !== null && normalizeAnswer(w.answer) === normalizeAnswer(hop.answer);
      if (reportOk) {
        goodReports++;
        reportedHop[k] = true;
      }
      if (hop.paragraphSupportIdx !== null) {
        factWorkers++;
        if (retrievedBy(traj, w.id).has(hop.paragraphSupportIdx)) retrieved++;
      }
    }
    hops += d.length;
    asked += askedHop.filter(Boolean).length;
    askedHop.forEach((a, k) => {
      const slot = byHop[k];
      if (!slot) return;
      slot.den++;
      if (a) slot.num++;
    });
    if (reportedHop.every(Boolean)) {
      allGood++;
      allGoodCorrect += ok;
    }
  }
  const used = byHop.filter((h) => h.den > 0);
  return {
    trajectories: trajectories.length,
    accuracy: rate(correct, trajectories.length),
    subQuestion: rate(asked, hops),
    retrieval: rate(retrieved, factWorkers),
    report: rate(goodReports, matched),
    finalGivenReports: rate(allGoodCorrect, allGood),
    invalidCalls: rate(invalid, calls),
    offPlan: rate(offPlan, workers),
    subQuestionByHop: used.map((h) => rate(h.num, h.den)),
  };
}

/** Wilson score interval (95% by default) of a binomial proportion: sensible at 0 and 1, unlike the normal one. */
export function wilsonInterval(num: number, den: number, z = 1.959964): [number, number] {
  if (den === 0) return [0, 1];
  const p = num / den;
  const z2 = z * z;
  const centre = (p + z2 / (2 * den)) / (1 + z2 / den);
  const half = (z * Math.sqrt((p * (1 - p)) / den + z2 / (4 * den * den))) / (1 + z2 / den);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/** "0.42 [0.35, 0.49] (n = 200)". */
export function formatRate(r: Rate, digits = 2): string {
  if (r.rate === null) return `- (n = 0)`;
  const [lo, hi] = wilsonInterval(r.num, r.den);
  return `${r.rate.toFixed(digits)} [${lo.toFixed(digits)}, ${hi.toFixed(digits)}] (n = ${r.den})`;
}

/** Sums breakdowns of disjoint trajectory sets (rates recomputed from the summed counts). */
export function mergeBreakdowns(parts: readonly StageBreakdown[]): StageBreakdown {
  const add = (pick: (b: StageBreakdown) => Rate): Rate => {
    const num = parts.reduce((a, b) => a + pick(b).num, 0);
    const den = parts.reduce((a, b) => a + pick(b).den, 0);
    return rate(num, den);
  };
  const hops = Math.max(0, ...parts.map((b) => b.subQuestionByHop.length));
  return {
    trajectories: parts.reduce((a, b) => a + b.trajectories, 0),
    accuracy: add((b) => b.accuracy),
    subQuestion: add((b) => b.subQuestion),
    retrieval: add((b) => b.retrieval),
    report: add((b) => b.report),
    finalGivenReports: add((b) => b.finalGivenReports),
    invalidCalls: add((b) => b.invalidCalls),
    offPlan: add((b) => b.offPlan),
    subQuestionByHop: Array.from({ length: hops }, (_, k) => add((b) => b.subQuestionByHop[k] ?? rate(0, 0))),
  };
}

/** The breakdown as a markdown section (report.md of `sharp eval`, docs/results.md). */
export function breakdownMarkdown(b: StageBreakdown): string {
  const row = (name: string, r: Rate) => `| ${name} | ${formatRate(r, 3)} |`;
  return [
    '## Per-stage breakdown',
    '',
    "Against the gold decomposition: a worker counts for hop k when its subtask is hop k's question with the gold " +
      'answers filled in (src/eval/breakdown.ts).',
    '',
    '| stage | rate [95% CI] (n) |',
    '| --- | --- |',
    row('final answer right (success function)', b.accuracy),
    row("planner asked the hop's sub-question", b.subQuestion),
    ...b.subQuestionByHop.map((r, k) => row(`  hop ${k + 1}`, r)),
    row('worker search retrieved the support paragraph', b.retrieval),
    row("worker report equals the hop's gold answer", b.report),
    row('final answer right given right reports on every hop', b.finalGivenReports),
    row('invalid tool calls (of all calls)', b.invalidCalls),
    row('worker calls matching no hop', b.offPlan),
    '',
  ].join('\n');
}
