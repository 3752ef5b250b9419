import type { Episode } from '../../data/episode.ts';
import { arithmeticExpression, extractAnswer, parseHopQuestion, substituteRefs } from '../../data/synth/reader.ts';
import { fill, RELATIONS, type RelationId } from '../../data/synth/relations.ts';
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
 * of hop k, then answers the last hop's report. Worker: an arithmetic hop goes to `calculate`
 * (`arithmeticExpression`); any other hop is searched and read with `extractAnswer` from the shown
 * results; when the top results do not state it, it searches once more for the hop's subject alone.
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
export function failureHappens(f: ExpertFailures, what: keyof Omit<ExpertFailures, 'seed'>, episodeId: string, which: number): boolean {
  const p = f[what];
  return p > 0 && uniform(`${f.seed}\u0000${what}\u0000${episodeId}\u0000${which}`) < p;
}

export const DEFAULT_IRRELEVANT_SUBTASK = 'Which paragraph describes the weather?';
/** What a worker with nothing to report answers. */
export const EXPERT_UNKNOWN = 'unknown';

export function hopSteps(episode: Episode): ExpertStep[] {
  return decompositionOf(episode).map((_, hop) => ({ kind: 'hop', hop }));
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
  const others = (Object.keys(RELATIONS) as RelationId[]).filter((r) => r !== parsed.relation && RELATIONS[r].subject === kind).sort();
  if (others.length === 0) return null;
  const pick = others[Math.floor(uniform(`irrelevant\u0000${episode.id}`) * others.length)] as RelationId;
  return fill(RELATIONS[pick].hop, { s: parsed.subject });
}

/** The default delegations with the planner's failure modes applied. */
function failureSteps(episode: Episode, f: ExpertFailures): ExpertStep[] {
  const steps = hopSteps(episode);
  if (failureHappens(f, 'redundant', episode.id, 0)) {
    const hop = Math.floor(uniform(`${f.seed}\u0000redundant-hop\u0000${episode.id}`) * steps.length);
    steps.splice(hop + 1, 0, { kind: 'hop', hop });
  }
  const irrelevant = failureHappens(f, 'irrelevant', episode.id, 0) ? irrelevantSubtask(episode) : null;
  if (irrelevant) steps.unshift({ kind: 'irrelevant', subtask: irrelevant });
  return steps;
}

function stepsOf(episode: Episode, opts: ExpertOptions): ExpertStep[] {
  if (opts.steps) return opts.steps(episode);
  return opts.failures ? failureSteps(episode, opts.failures) : hopSteps(episode);
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
function hopAnswers(steps: readonly ExpertStep[], meta: RequestMeta, trust: 'latest' | 'first'): (string | undefined)[] {
  const answers: (string | undefined)[] = [];
  const reports = meta.results.filter((r) => r.name === 'delegate');
  reports.forEach((r, k) => {
    const step = steps[k];
    if (step?.kind !== 'hop') return;
    if (trust === 'latest' || answers[step.hop] === undefined) answers[step.hop] = r.output;
  });
  return answers;
}

function plannerText(meta: RequestMeta, opts: ExpertOptions): string {
  const p = PROTOCOLS[meta.protocol];
  const decomposition = decompositionOf(meta.episode);
  const steps = stepsOf(meta.episode, opts);
  const answers = hopAnswers(steps, meta, opts.trust ?? 'latest');
  const k = meta.results.filter((r) => r.name === 'delegate').length;
  const step = steps[k];
  if (step === undefined) return p.formatAnswer(answers[decomposition.length - 1] ?? EXPERT_UNKNOWN);
  if (step.kind === 'irrelevant') return p.formatCall('delegate', step.subtask ?? DEFAULT_IRRELEVANT_SUBTASK);
  const hop = decomposition[step.hop];
  if (!hop) throw new Error(`expert: step ${k} names hop ${step.hop} but episode ${meta.episode.id} has ${decomposition.length} hops`);
  const known = answers.map((a) => a ?? '');
  return p.formatCall('delegate', substituteRefs(hop.question, known));
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

/** The first answer one of the shown results states for the subtask. */
function readResults(subtask: string, output: string): string | null {
  for (const { text } of resultLines(output)) {
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
): string {
  const answers: string[] = [];
  let next = 0;
  for (let k = 0; k < hops.length; k++) {
    const q = substituteRefs(hops[k] as string, answers);
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
    let found = first.valid ? readResults(q, first.output) : null;
    if (m === 'distractor' && first.valid) found = readDistractor(q, first.output, found) ?? found;
    if (!found) {
      // The top results do not state it: search once more for the subject alone.
      const subject = parseHopQuestion(q)?.subject;
      if (subject) {
        const second = results[next++];
        if (!second) return p.formatCall('search', subject);
        found = second.valid ? readResults(q, second.output) : null;
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

function workerText(meta: RequestMeta, opts: ExpertOptions): string {
  const p = PROTOCOLS[meta.protocol];
  const subtask = meta.subtask ?? '';
  const steps = stepsOf(meta.episode, opts);
  const step = meta.delegation === null ? undefined : steps[meta.delegation];
  if (step?.kind === 'hop' && step.sabotage !== undefined) return p.formatAnswer(step.sabotage);
  return soloText(p, [subtask], meta.results, () => mistakeOf(opts.failures, meta.episode.id, meta.delegation ?? 0));
}

/** The lone agent (agents = single): every hop itself, in order; hop k's mistakes keyed like delegation k. */
function singleText(meta: RequestMeta, opts: ExpertOptions): string {
  const hops = decompositionOf(meta.episode).map((h) => h.question);
  return soloText(PROTOCOLS[meta.protocol], hops, meta.results, (k) => mistakeOf(opts.failures, meta.episode.id, k));
}

export function expertText(req: PolicyRequest, opts: ExpertOptions = {}): string {
  const meta = requestMeta(req);
  if (meta.role === 'worker') return workerText(meta, opts);
  return opts.agents === 'single' ? singleText(meta, opts) : plannerText(meta, opts);
}

export function expertPolicy(opts: ExpertOptions = {}): ScriptedPolicy {
  return new ScriptedPolicy((req) => expertText(req, opts));
}
