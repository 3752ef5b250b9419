import type { Episode } from '../../data/episode.ts';
import { arithmeticExpression, extractAnswer, parseHopQuestion, substituteRefs } from '../../data/synth/reader.ts';
import { requestMeta, type RequestMeta } from '../engine.ts';
import type { PolicyRequest } from '../policy.ts';
import { PROTOCOLS } from '../protocol/index.ts';
import { ScriptedPolicy } from './policy.ts';

/**
 * The scripted expert for synthetic episodes (issue 4 item 6): it solves them through the real engine,
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
  /** The planner's delegations for an episode, in order (default: each hop once: `hopSteps`). */
  steps?: (episode: Episode) => ExpertStep[];
  /** When two reports answer the same hop: trust the latest (default) or the first. */
  trust?: 'latest' | 'first';
}

export const DEFAULT_IRRELEVANT_SUBTASK = 'Which paragraph describes the weather?';
/** What a worker with nothing to report answers. */
export const EXPERT_UNKNOWN = 'unknown';

export function hopSteps(episode: Episode): ExpertStep[] {
  return decompositionOf(episode).map((_, hop) => ({ kind: 'hop', hop }));
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
  const steps = (opts.steps ?? hopSteps)(meta.episode);
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

/** Reads `[idx] Title: text` result lines and returns the first answer one of them states. */
function readResults(subtask: string, output: string): string | null {
  for (const line of output.split('\n')) {
    const m = /^\[\d+\] [^:]*: (.*)$/.exec(line);
    const found = m?.[1] ? extractAnswer(subtask, m[1]) : null;
    if (found) return found;
  }
  return null;
}

function workerText(meta: RequestMeta, opts: ExpertOptions): string {
  const p = PROTOCOLS[meta.protocol];
  const subtask = meta.subtask ?? '';
  const steps = (opts.steps ?? hopSteps)(meta.episode);
  const step = meta.delegation === null ? undefined : steps[meta.delegation];
  if (step?.kind === 'hop' && step.sabotage !== undefined) return p.formatAnswer(step.sabotage);
  const last = meta.results.at(-1);
  if (!last) {
    const expr = arithmeticExpression(subtask);
    return expr ? p.formatCall('calculate', expr) : p.formatCall('search', subtask);
  }
  if (last.name === 'calculate') return p.formatAnswer(last.valid ? last.output : EXPERT_UNKNOWN);
  const found = last.valid ? readResults(subtask, last.output) : null;
  if (found) return p.formatAnswer(found);
  const subject = parseHopQuestion(subtask)?.subject;
  const searches = meta.results.filter((r) => r.name === 'search').length;
  if (subject && searches === 1) return p.formatCall('search', subject);
  return p.formatAnswer(EXPERT_UNKNOWN);
}

export function expertText(req: PolicyRequest, opts: ExpertOptions = {}): string {
  const meta = requestMeta(req);
  return meta.role === 'planner' ? plannerText(meta, opts) : workerText(meta, opts);
}

export function expertPolicy(opts: ExpertOptions = {}): ScriptedPolicy {
  return new ScriptedPolicy((req) => expertText(req, opts));
}
