import type { ChatMessage, Role } from '../rollout/types.ts';
import type { Judge, JudgeContext } from './judges/types.ts';
import type { Label } from './message-shares.ts';

/**
 * Failure path: on a failed trajectory, find the first
 * generated message after which the transcript has gone wrong, by binary search over prefixes with
 * a prefix judge. Only generated (assistant) messages can be errors (tool results and reports
 * inserted by the engine are consequences), so the search runs over the T assistant messages:
 * prefix j = every message up to the j-th assistant message. One call checks the full prefix (the
 * judge may find no error at all), then at most ceil(log2 T) calls bisect: ceil(log2 T) + 1 in all.
 * Messages after the first error (repair attempts) are not blamed.
 */
export interface FirstError {
  trajectoryId: string;
  /** Index into Trajectory.messages of the first erroneous message; null when the judge found none. */
  index: number | null;
  agent: number | null;
  role: Role | null;
  judgeCalls: number;
}

/** The budget the search never exceeds: ceil(log2 T) + 1 (0 for T = 0). */
export function maxJudgeCalls(t: number): number {
  return t === 0 ? 0 : Math.ceil(Math.log2(t)) + 1;
}

export async function locateFirstError(ctx: JudgeContext, judge: Judge): Promise<FirstError> {
  const gen = ctx.traj.messages.filter((m) => m.chatRole === 'assistant').map((m) => m.index);
  const t = gen.length;
  let calls = 0;
  const failed = async (j: number): Promise<boolean> => {
    calls += 1;
    return judge.prefixFailed(ctx, gen[j - 1]);
  };
  const none: FirstError = { trajectoryId: ctx.traj.id, index: null, agent: null, role: null, judgeCalls: 0 };
  if (t === 0 || !(await failed(t))) return { ...none, judgeCalls: calls };
  // Invariant: prefix lo has not failed (lo = 0 is the empty prefix), prefix hi has.
  let lo = 0;
  let hi = t;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await failed(mid)) hi = mid;
    else lo = mid;
  }
  const msg = ctx.traj.messages[gen[hi - 1]];
  return { trajectoryId: ctx.traj.id, index: msg.index, agent: msg.agent, role: msg.role, judgeCalls: calls };
}

/** Labels for message shares on a failure: -1 on the first error only (repairs after it are not blamed). */
export function blameLabels(first: FirstError): Map<number, Label> {
  const out = new Map<number, Label>();
  if (first.index !== null) out.set(first.index, -1);
  return out;
}

/** A DPO pair: the erring agent's context, an accepted alternative, the error. */
export interface PreferencePair {
  prefix: ChatMessage[];
  chosen: string;
  rejected: string;
  metadata: {
    trajectoryId: string;
    episodeId: string;
    messageIndex: number;
    agent: number;
    role: Role;
    judge: string;
    /** Resamples drawn until one was accepted. */
    attempts: number;
  };
}

/** Context the agent saw when it generated message `index` (the engine's `agentContext`). */
export type ContextOf = (ctx: JudgeContext, index: number) => ChatMessage[];

/** Draws one alternative for message `index` from the agent's context (the policy, injected). */
export type Resampler = (req: { ctx: JudgeContext; index: number; prefix: ChatMessage[]; role: Role; attempt: number }) => Promise<string>;

/**
 * Resamples the first error up to `maxAttempts` times; the first alternative the judge accepts (and
 * that differs from the error) becomes `chosen`. null when none was accepted: no pair rather than a
 * pair whose "chosen" side is not known to be better.
 */
export async function preferencePair(
  ctx: JudgeContext,
  first: FirstError,
  judge: Judge,
  contextOf: ContextOf,
  resample: Resampler,
  maxAttempts: number,
): Promise<PreferencePair | null> {
  if (first.index === null || first.agent === null || first.role === null) return null;
  const rejected = ctx.traj.messages[first.index].text;
  const prefix = contextOf(ctx, first.index);
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const alt = await resample({ ctx, index: first.index, prefix, role: first.role, attempt });
    if (alt === rejected || !(await judge.acceptsAlternative(ctx, first.index, alt))) continue;
    return {
      prefix,
      chosen: alt,
      rejected,
      metadata: { trajectoryId: ctx.traj.id, episodeId: ctx.episode.id, messageIndex: first.index, agent: first.agent, role: first.role, judge: judge.name, attempts: attempt },
    };
  }
  return null;
}
