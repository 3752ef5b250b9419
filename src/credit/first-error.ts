import type { ChatMessage, Role, Trajectory } from '../rollout/types.ts';
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

/**
 * Labels for message shares on a failure: -1 on the first error, 0 on every other generated
 * message (the bisection cleared those before it; repairs after it are not blamed), so each is judged.
 */
export function blameLabels(first: FirstError, traj: Trajectory): Map<number, Label> {
  const out = new Map<number, Label>();
  for (const m of traj.messages) if (m.chatRole === 'assistant') out.set(m.index, 0);
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

/** One alternative to draw: message `index` of `ctx.traj`, from the agent's context `prefix`. */
interface ResampleRequest {
  ctx: JudgeContext;
  index: number;
  prefix: ChatMessage[];
  role: Role;
  /** 1-based: the order in which the alternatives of one message are tried. */
  attempt: number;
}

/** Draws one alternative per request, in one batched call to the policy (injected). */
export type Resampler = (reqs: readonly ResampleRequest[]) => Promise<string[]>;

/**
 * Resamples the first errors in rounds: round r draws attempt r of every error not yet repaired, in
 * ONE resampler call (one batched decode for a whole group instead of one call per attempt, and no
 * draw for an error already repaired); an alternative the judge accepts (and that differs from the
 * error) becomes `chosen`. null after `maxAttempts` rounds without one: no pair rather than a pair
 * whose "chosen" side is not known to be better.
 */
export async function preferencePairs(
  items: readonly { ctx: JudgeContext; first: FirstError }[],
  judge: Judge,
  contextOf: ContextOf,
  resample: Resampler,
  maxAttempts: number,
): Promise<(PreferencePair | null)[]> {
  const out: (PreferencePair | null)[] = items.map(() => null);
  let open = items.flatMap(({ ctx, first }, i) =>
    first.index === null || first.agent === null || first.role === null
      ? []
      : [{ i, ctx, index: first.index, agent: first.agent, role: first.role, prefix: contextOf(ctx, first.index) }],
  );
  for (let attempt = 1; attempt <= maxAttempts && open.length > 0; attempt++) {
    const alts = await resample(open.map(({ ctx, index, prefix, role }) => ({ ctx, index, prefix, role, attempt })));
    if (alts.length !== open.length)
      throw new Error(`resampler returned ${alts.length} alternatives for ${open.length} requests`);
    const still: typeof open = [];
    for (const [j, l] of open.entries()) {
      const alt = alts[j];
      const rejected = l.ctx.traj.messages[l.index].text;
      if (alt === rejected || !(await judge.acceptsAlternative(l.ctx, l.index, alt))) {
        still.push(l);
        continue;
      }
      out[l.i] = {
        prefix: l.prefix,
        chosen: alt,
        rejected,
        metadata: {
          trajectoryId: l.ctx.traj.id,
          episodeId: l.ctx.episode.id,
          messageIndex: l.index,
          agent: l.agent,
          role: l.role,
          judge: judge.name,
          attempts: attempt,
        },
      };
    }
    open = still;
  }
  return out;
}

/** preferencePairs for one first error. */
export async function preferencePair(
  ctx: JudgeContext,
  first: FirstError,
  judge: Judge,
  contextOf: ContextOf,
  resample: Resampler,
  maxAttempts: number,
): Promise<PreferencePair | null> {
  const [pair] = await preferencePairs([{ ctx, first }], judge, contextOf, resample, maxAttempts);
  return pair ?? null;
}
