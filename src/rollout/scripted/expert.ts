import type { Episode } from '../../data/episode.ts';
import {
  arithmeticExpression,
  comparisonAnswer,
  comparisonExpression,
  comparisonItemWith,
  extractAnswer,
  parseComparison,
  parseHopQuestion,
  substituteRefs,
} from '../../data/synth/reader.ts';
import { fill, isUnreliableTitle, RELATIONS, type RelationId } from '../../data/synth/relations.ts';
import { mixedHash32 } from '../../random/hash.ts';
import { requestMeta, type RequestMeta } from '../engine.ts';
import type { PolicyRequest } from '../policy.ts';
import { PROTOCOLS } from '../protocol/index.ts';
import { ScriptedPolicy } from './policy.ts';

/**
 * The scripted expert for synthetic episodes: it solves them through the real engine,
 * protocol and tools, and its transcripts are the SFT data. It is a pure function of the request: the
 * planner's progress is read from its own tool results (the reports), the worker's from its own.
 *
 * Planner: delegates each hop of `episode.decomposition` in order, with `#k` replaced by the report
 * of hop k, then answers the last hop's report. When a message may carry several delegations
 * (`meta.maxParallel`, from rollout.maxParallelDelegations), the delegations whose hops need no
 * report still to come go out together, up to that many per message: the independent lookups of a
 * comparison or aggregation run side by side. A comparison hop ("Who was born first, X (born in
 * 1950) or Y (born in 1962)?") is the planner's own: it answers it from the reports. Worker: an
 * arithmetic hop goes to `calculate` (`arithmeticExpression`); any other hop is searched and read
 * with `extractAnswer` from the shown results, passing over results whose title marks them
 * unreliable ("Rumour about X"); when the top results do not state it, it searches once more for the
 * hop's subject alone.
 *
 * For the credit tests the planner's delegations are configurable (`steps`): irrelevant subtasks, a
 * hop delegated twice, saboteur workers that answer a hop wrongly, and which report to trust when two
 * answer the same hop.
 */
export type ExpertStep =
  /** Delegate hop `hop` (0-based); a `sabotage` text makes that delegation's worker answer it instead. */
  | { kind: 'hop'; hop: number; sabotage?: string }
  /** Delegate a subtask that no hop needs. */
  | { kind: 'irrelevant'; subtask?: string };

export interface ExpertOptions {
  /** The planner's delegations for an episode, in order (default: each hop once, plus `failures`). */
  steps?: (episode: Episode) => ExpertStep[];
  /** When two reports answer the same hop: trust the latest (default) or the first. */
  trust?: 'latest' | 'first';
  /** Realistic mistakes at these rates (default: none; the expert is then always right). */
  failures?: ExpertFailures;
  /**
   * multi (default): the root agent is the planner and delegates. single: the root agent solves
   * every hop itself with the worker tools (run the engine with agents = single).
   */
  agents?: 'multi' | 'single';
  /**
   * Who decides a comparison hop ("Who was born first, X (born in 1950) or Y (born in 1962)?"):
   * planner (default): the planner answers it from the reports; calculate: it is delegated like any
   * hop, and the worker (or the lone agent) calls `calculate` with argmin or argmax over the
   * items labelled with their years and answers the item the tool names.
   */
  comparisons?: 'planner' | 'calculate';
}

/**
 * Failure modes of the expert, as probabilities. Each decision is a hash of (seed, episode, what, which)
 * so the expert stays a pure function of the request (the same request always gets the same text).
 * A worker's mistakes apply to fact hops (hops answered from a paragraph); arithmetic hops stay right.
 */
export interface ExpertFailures {
  /** A worker answers at once without searching: it echoes the subject of its subtask. */
  noSearch: number;
  /**
   * A worker answers from a distractor: the same relation read off a search result about another
   * entity (when the shown results have none, it answers correctly).
   */
  distractor: number;
  /** The planner delegates one hop twice in a row (redundant; with trust = latest the second report wins). */
  redundant: number;
  /** The planner delegates an irrelevant subtask (a true but unneeded fact about the question's subject) first. */
  irrelevant: number;
  /**
   * A worker trusts unreliable sources: it reads results titled as rumours first, so it reports a
   * planted wrong claim whenever the planted paragraph is among its search results (default 0).
   */
  trustPlanted?: number;
  /** Seed of the decisions. */
  seed: number;
}

export const NO_FAILURES: ExpertFailures = { noSearch: 0, distractor: 0, redundant: 0, irrelevant: 0, seed: 0 };

/** FNV-1a of the key, as a uniform number in [0, 1). */
function uniform(key: string): number {
  // Mixed: consecutive keys differ in their last characters only.
  return mixedHash32(key) / 2 ** 32;
}

/** Whether the failure `what` happens for (episode, which) at rate `p`. */
function failureHappens(
  f: ExpertFailures,
  what: keyof Omit<ExpertFailures, 'seed'>,
  episodeId: string,
  which: number,
): boolean {
  const p = f[what] ?? 0;
  return p > 0 && uniform(`${f.seed}\u0000${what}\u0000${episodeId}\u0000${which}`) < p;
}

export const DEFAULT_IRRELEVANT_SUBTASK = 'Which paragraph describes the weather?';
/** What a worker with nothing to report answers. */
export const EXPERT_UNKNOWN = 'unknown';

type Comparisons = NonNullable<ExpertOptions['comparisons']>;

/** Whether a hop is the planner's own (a comparison of reports, unless comparisons are delegated), not delegated. */
function plannerHop(question: string, comparisons: Comparisons = 'planner'): boolean {
  return comparisons === 'planner' && parseComparison(question) !== null;
}

/** Each hop once, in order, except the planner's own comparison hops. */
export function hopSteps(episode: Episode, comparisons: Comparisons = 'planner'): ExpertStep[] {
  return decompositionOf(episode).flatMap((h, hop): ExpertStep[] =>
    plannerHop(h.question, comparisons) ? [] : [{ kind: 'hop', hop }],
  );
}

/**
 * An irrelevant but answerable subtask: another relation of the first hop's subject ("What was the
 * occupation of X?" when the question needs X's mentor). Null when the first hop is not a fact hop.
 */
export function irrelevantSubtask(episode: Episode): string | null {
  const first = decompositionOf(episode)[0];
  const parsed = first ? parseHopQuestion(first.question) : null;
  if (!parsed) return null;
  const kind = RELATIONS[parsed.relation].subject;
  const others = (Object.keys(RELATIONS) as RelationId[])
    .filter((r) => r !== parsed.relation && RELATIONS[r].subject === kind)
    .sort();
  if (others.length === 0) return null;
  const pick = others[Math.floor(uniform(`irrelevant\u0000${episode.id}`) * others.length)] as RelationId;
  return fill(RELATIONS[pick].hop, { s: parsed.subject });
}

/** The default delegations with the planner's failure modes applied. */
function failureSteps(episode: Episode, f: ExpertFailures, comparisons: Comparisons): ExpertStep[] {
  const steps = hopSteps(episode, comparisons);
  if (failureHappens(f, 'redundant', episode.id, 0)) {
    const at = Math.floor(uniform(`${f.seed}\u0000redundant-hop\u0000${episode.id}`) * steps.length);
    steps.splice(at + 1, 0, { ...(steps[at] as ExpertStep) });
  }
  const irrelevant = failureHappens(f, 'irrelevant', episode.id, 0) ? irrelevantSubtask(episode) : null;
  if (irrelevant) steps.unshift({ kind: 'irrelevant', subtask: irrelevant });
  return steps;
}

function stepsOf(episode: Episode, opts: ExpertOptions): ExpertStep[] {
  if (opts.steps) return opts.steps(episode);
  const comparisons = opts.comparisons ?? 'planner';
  return opts.failures ? failureSteps(episode, opts.failures, comparisons) : hopSteps(episode, comparisons);
}

/** Default steps with `step` inserted before position `at` (at = number of hops: at the end). */
export function insertStep(at: number, step: ExpertStep): (episode: Episode) => ExpertStep[] {
  return (episode) => {
    const steps = hopSteps(episode);
    steps.splice(at, 0, step);
    return steps;
  };
}

function decompositionOf(episode: Episode): NonNullable<Episode['decomposition']> {
  const d = episode.decomposition;
  if (!d || d.length === 0) throw new Error(`expert: episode ${episode.id} has no decomposition`);
  return d;
}

/** Hop answers known to the planner from its reports so far (undefined where none yet). */
function hopAnswers(
  steps: readonly ExpertStep[],
  meta: RequestMeta,
  trust: 'latest' | 'first',
): (string | undefined)[] {
  const answers: (string | undefined)[] = [];
  const reports = meta.results.filter((r) => r.name === 'delegate');
  reports.forEach((r, k) => {
    const step = steps[k];
    if (step?.kind !== 'hop') return;
    if (trust === 'latest' || answers[step.hop] === undefined) answers[step.hop] = r.output;
  });
  return answers;
}

/** Hops (0-based) a hop question refers to as `#k`. */
function refsOf(question: string): number[] {
  return [...question.matchAll(/#(\d+)/g)].map((m) => Number(m[1]) - 1);
}

/**
 * The planner's messages as groups of consecutive steps: a step joins the group before it when its
 * hop needs no report of that group (only hops delegated in earlier messages) and the group has
 * fewer than `maxParallel` steps. maxParallel = 1: one delegation per message.
 */
export function messageGroups(
  steps: readonly ExpertStep[],
  decomposition: NonNullable<Episode['decomposition']>,
  maxParallel: number,
): number[][] {
  const groups: number[][] = [];
  const delegated = new Set<number>();
  const ready = (step: ExpertStep): boolean =>
    step.kind === 'irrelevant' || refsOf(decomposition[step.hop]?.question ?? '').every((k) => delegated.has(k));
  for (let s = 0; s < steps.length;) {
    const group = [s];
    while (
      group.length < maxParallel &&
      s + group.length < steps.length &&
      ready(steps[s + group.length] as ExpertStep)
    )
      group.push(s + group.length);
    for (const i of group) {
      const step = steps[i] as ExpertStep;
      if (step.kind === 'hop') delegated.add(step.hop);
    }
    groups.push(group);
    s += group.length;
  }
  return groups;
}

/**
 * The default steps in the order a planner that may delegate side by side takes them: by wave (a
 * hop's wave is one more than the latest wave of the hops it refers to; irrelevant subtasks are in
 * wave 0), stably, so every lookup that needs no report goes first ("Who founded A?" and "In what
 * year was B born?" before "In what year was #1 born?"). Custom steps keep their order.
 */
function planOf(meta: RequestMeta, opts: ExpertOptions): ExpertStep[] {
  const steps = stepsOf(meta.episode, opts);
  if (opts.steps || (meta.maxParallel ?? 1) <= 1) return steps;
  const decomposition = decompositionOf(meta.episode);
  const waves: number[] = [];
  decomposition.forEach((h, i) => {
    waves[i] = Math.max(-1, ...refsOf(h.question).map((k) => waves[k] ?? 0)) + 1;
  });
  const waveOf = (step: ExpertStep): number => (step.kind === 'hop' ? (waves[step.hop] ?? 0) : 0);
  return steps
    .map((step, i) => ({ step, i }))
    .sort((a, b) => waveOf(a.step) - waveOf(b.step) || a.i - b.i)
    .map((x) => x.step);
}

function plannerText(meta: RequestMeta, opts: ExpertOptions): string {
  const p = PROTOCOLS[meta.protocol];
  const decomposition = decompositionOf(meta.episode);
  const steps = planOf(meta, opts);
  const answers = hopAnswers(steps, meta, opts.trust ?? 'latest');
  const known = answers.map((a) => a ?? '');
  const k = meta.results.filter((r) => r.name === 'delegate').length;
  if (k >= steps.length) {
    const last = decomposition[decomposition.length - 1] as NonNullable<Episode['decomposition']>[number];
    // A comparison is the planner's own; otherwise the last delegated hop's report is the answer.
    const final = plannerHop(last.question, opts.comparisons)
      ? comparisonAnswer(substituteRefs(last.question, known))
      : answers[decomposition.length - 1];
    return p.formatAnswer(final ?? EXPERT_UNKNOWN);
  }
  // The message that starts at step k (k is always a group start unless a reply went missing).
  const group = messageGroups(steps, decomposition, meta.maxParallel ?? 1).find((g) => g[0] === k) ?? [k];
  const subtasks = group.map((i) => {
    const step = steps[i] as ExpertStep;
    if (step.kind === 'irrelevant') return step.subtask ?? DEFAULT_IRRELEVANT_SUBTASK;
    const hop = decomposition[step.hop];
    if (!hop)
      throw new Error(
        `expert: step ${i} names hop ${step.hop} but episode ${meta.episode.id} has ${decomposition.length} hops`,
      );
    return substituteRefs(hop.question, known);
  });
  if (subtasks.length === 1) return p.formatCall('delegate', subtasks[0] as string);
  return p.formatCalls(subtasks.map((input) => ({ name: 'delegate' as const, input })));
}

/** `[idx] Title: text` result lines as (title, text). */
function resultLines(output: string): { title: string; text: string }[] {
  const out: { title: string; text: string }[] = [];
  for (const line of output.split('\n')) {
    const m = /^\[\d+\] ([^:]*): (.*)$/.exec(line);
    if (m?.[1] !== undefined && m[2] !== undefined) out.push({ title: m[1], text: m[2] });
  }
  return out;
}

/**
 * The first answer one of the shown results states for the subtask. A careful reader passes over
 * results titled as unreliable; a trusting one reads them first.
 */
function readResults(subtask: string, output: string, trusting = false): string | null {
  const lines = resultLines(output);
  const unreliable = lines.filter((l) => isUnreliableTitle(l.title));
  const reliable = lines.filter((l) => !isUnreliableTitle(l.title));
  for (const { text } of trusting ? [...unreliable, ...reliable] : reliable) {
    const found = extractAnswer(subtask, text);
    if (found) return found;
  }
  return null;
}

/**
 * A distractor's answer: the subtask's relation read off a result about another entity, when it
 * differs from `right` (null when no shown result gives such an answer).
 */
function readDistractor(subtask: string, output: string, right: string | null): string | null {
  const parsed = parseHopQuestion(subtask);
  if (!parsed) return null;
  for (const { title, text } of resultLines(output)) {
    if (title === parsed.subject) continue;
    const found = extractAnswer(fill(RELATIONS[parsed.relation].hop, { s: title }), text);
    if (found && found !== right) return found;
  }
  return null;
}

type ToolResult = RequestMeta['results'][number];

/**
 * One agent solving `hops` (questions with `#k` references to earlier hops) with the worker tools,
 * read back from its own tool results: the next action, or the answer of the last hop once every
 * hop has its result. A worker has one hop (its subtask); the lone agent of agents = single has the
 * whole decomposition. `mistake(k)` says which failure (if any) hop k suffers.
 */
function soloText(
  p: (typeof PROTOCOLS)[keyof typeof PROTOCOLS],
  hops: readonly string[],
  results: readonly ToolResult[],
  mistake: (k: number) => 'noSearch' | 'distractor' | null,
  trusting: (k: number) => boolean = () => false,
  comparisons: Comparisons = 'planner',
): string {
  const answers: string[] = [];
  let next = 0;
  for (let k = 0; k < hops.length; k++) {
    const q = substituteRefs(hops[k] as string, answers);
    if (parseComparison(q)) {
      if (comparisons === 'planner') {
        // A comparison needs no tool: the reports' years decide it.
        answers.push(comparisonAnswer(q) ?? EXPERT_UNKNOWN);
        continue;
      }
      // argmin / argmax of the labelled years by `calculate`, then the item it names.
      const expr = comparisonExpression(q);
      if (!expr) {
        answers.push(EXPERT_UNKNOWN);
        continue;
      }
      const r = results[next++];
      if (!r) return p.formatCall('calculate', expr);
      answers.push((r.name === 'calculate' && r.valid ? comparisonItemWith(q, r.output) : null) ?? EXPERT_UNKNOWN);
      continue;
    }
    const expr = arithmeticExpression(q);
    if (expr) {
      const r = results[next++];
      if (!r) return p.formatCall('calculate', expr);
      answers.push(r.name === 'calculate' && r.valid ? r.output : EXPERT_UNKNOWN);
      continue;
    }
    const m = mistake(k);
    if (m === 'noSearch') {
      answers.push(parseHopQuestion(q)?.subject ?? EXPERT_UNKNOWN);
      continue;
    }
    const first = results[next++];
    if (!first) return p.formatCall('search', q);
    const trust = trusting(k);
    let found = first.valid ? readResults(q, first.output, trust) : null;
    if (m === 'distractor' && first.valid) found = readDistractor(q, first.output, found) ?? found;
    if (!found) {
      // The top results do not state it: search once more for the subject alone.
      const subject = parseHopQuestion(q)?.subject;
      if (subject) {
        const second = results[next++];
        if (!second) return p.formatCall('search', subject);
        found = second.valid ? readResults(q, second.output, trust) : null;
      }
    }
    answers.push(found ?? EXPERT_UNKNOWN);
  }
  return p.formatAnswer(answers[answers.length - 1] ?? EXPERT_UNKNOWN);
}

/** Which mistake a hop suffers: drawn once per (episode, key); noSearch is drawn first. */
function mistakeOf(f: ExpertFailures | undefined, episodeId: string, key: number): 'noSearch' | 'distractor' | null {
  if (!f) return null;
  if (failureHappens(f, 'noSearch', episodeId, key)) return 'noSearch';
  return failureHappens(f, 'distractor', episodeId, key) ? 'distractor' : null;
}

/** Whether the worker of delegation `key` (or the lone agent on hop `key`) trusts unreliable sources. */
function trustsOf(f: ExpertFailures | undefined, episodeId: string, key: number): boolean {
  return f !== undefined && failureHappens(f, 'trustPlanted', episodeId, key);
}

function workerText(meta: RequestMeta, opts: ExpertOptions): string {
  const p = PROTOCOLS[meta.protocol];
  const subtask = meta.subtask ?? '';
  const steps = stepsOf(meta.episode, opts);
  const step = meta.delegation === null ? undefined : steps[meta.delegation];
  if (step?.kind === 'hop' && step.sabotage !== undefined) return p.formatAnswer(step.sabotage);
  const key = meta.delegation ?? 0;
  return soloText(
    p,
    [subtask],
    meta.results,
    () => mistakeOf(opts.failures, meta.episode.id, key),
    () => trustsOf(opts.failures, meta.episode.id, key),
    opts.comparisons,
  );
}

/** The lone agent (agents = single): every hop itself, in order; hop k's mistakes keyed like delegation k. */
function singleText(meta: RequestMeta, opts: ExpertOptions): string {
  const hops = decompositionOf(meta.episode).map((h) => h.question);
  return soloText(
    PROTOCOLS[meta.protocol],
    hops,
    meta.results,
    (k) => mistakeOf(opts.failures, meta.episode.id, k),
    (k) => trustsOf(opts.failures, meta.episode.id, k),
    opts.comparisons,
  );
}

export function expertText(req: PolicyRequest, opts: ExpertOptions = {}): string {
  const meta = requestMeta(req);
  if (meta.role === 'worker') return workerText(meta, opts);
  return opts.agents === 'single' ? singleText(meta, opts) : plannerText(meta, opts);
}

export function expertPolicy(opts: ExpertOptions = {}): ScriptedPolicy {
  return new ScriptedPolicy((req) => expertText(req, opts));
}
