/**
 * The planner contexts behind the likelihood value (docs/architecture.md, "Credit"): the recorded
 * planner conversation, cut where the gold answer is teacher-forced, with the reports of the masked
 * delegations replaced by the placeholder. Pure: nothing is generated, nothing is sampled.
 *
 * - A coalition's context (`readThrough` absent) runs up to the planner's final-answer turn: every
 *   planner message before its last assistant message when that message answers, else the whole
 *   recorded planner conversation (a planner that never answered is asked to answer after it).
 * - The sequential form's context `readThrough: j` runs up to the moment the j-th executed
 *   delegation's report has been read (j = 0: just before the first report is shown), so worker m's
 *   information gain is v(readThrough m + 1) - v(readThrough m) read at its own report (IGPO's turn
 *   reward, arXiv 2510.14967, per agent).
 * The answer turn opens with the protocol's answer opener (`<answer>`), then the gold is forced.
 */
import type { Protocol } from '../rollout/protocol/index.ts';
import type { ChatMessage, Message, Trajectory } from '../rollout/types.ts';

export interface LikelihoodPoint {
  /** Delegations (0-based, in order of delegation) whose reports the planner sees as the placeholder. */
  masked: readonly number[];
  /** Sequential form: cut after this many delegation reports were read; absent: at the final-answer turn. */
  readThrough?: number;
}

export interface LikelihoodContext {
  /** The planner's chat messages before the forced answer turn. */
  messages: ChatMessage[];
  /** Text the answer turn starts with before the gold answer (the protocol's answer opener). */
  opener: string;
}

/** Where one planner result message sits and which delegation's report it shows (null: not a report). */
interface PlannerEntry {
  message: Message;
  delegation: number | null;
}

/**
 * The planner's messages in order, each result message tagged with the delegation whose report it
 * shows. Results follow their assistant message one per call, in call order (rollout/engine.ts; an agent stopped
 * by a limit gets none and says nothing more); the executed delegations (valid delegate calls) are numbered 0.. in
 * order, as the replays number them (rollout/replay.ts).
 */
function plannerEntries(traj: Trajectory): { entries: PlannerEntry[]; delegations: number } {
  const out: PlannerEntry[] = [];
  let pending: (number | null)[] = [];
  let nextDelegation = 0;
  for (const m of traj.messages) {
    if (m.agent !== 0) continue;
    if (m.chatRole === 'assistant') {
      pending = m.toolCalls.map((c) => (c.name === 'delegate' && c.valid ? nextDelegation++ : null));
      out.push({ message: m, delegation: null });
      continue;
    }
    // System prompt and question come before any assistant message; each later prompt message is a result.
    const delegation = pending.length > 0 ? (pending.shift() as number | null) : null;
    out.push({ message: m, delegation });
  }
  return { entries: out, delegations: nextDelegation };
}

/** The answer opener of a protocol: what formatAnswer writes before the answer text. */
export function answerOpener(protocol: Protocol): string {
  const marker = '\u0000';
  const full = protocol.formatAnswer(marker);
  return full.slice(0, full.indexOf(marker));
}

export function likelihoodContext(
  traj: Trajectory,
  protocol: Protocol,
  placeholder: string,
  point: LikelihoodPoint,
): LikelihoodContext {
  // Executed delegations, whether or not their report was shown: a planner stopped by a limit while its
  // workers ran never reads their reports, so masking one changes nothing and its gain is 0.
  const { entries, delegations } = plannerEntries(traj);
  for (const d of point.masked)
    if (!Number.isInteger(d) || d < 0 || d >= delegations)
      throw new Error(
        `likelihood ${traj.id}: masked delegation ${d} does not exist (the trajectory has ${delegations} delegations)`,
      );
  const last = entries.findLastIndex((e) => e.message.chatRole === 'assistant');
  const answerCut =
    last >= 0 && protocol.parse(entries[last]?.message.text ?? '').kind === 'answer' ? last : entries.length;
  let end = answerCut;
  if (point.readThrough !== undefined) {
    const j = point.readThrough;
    if (!Number.isInteger(j) || j < 0 || j > delegations)
      throw new Error(`likelihood ${traj.id}: readThrough ${j} is outside [0, ${delegations}]`);
    const shown = entries.filter((e) => e.delegation !== null).length;
    // After every report (j = K): just after the last one when all were shown, else the answer turn.
    const afterAll = shown === delegations ? entries.findLastIndex((e) => e.delegation !== null) + 1 : answerCut;
    // Just before report j is shown; a report never shown is read nowhere: its cut is the next one's.
    const next = entries.findIndex((e) => e.delegation !== null && e.delegation >= j);
    end = j === delegations || next < 0 ? afterAll : next;
  }
  const masked = new Set(point.masked);
  const shownPlaceholder = protocol.formatResult(placeholder);
  const messages = entries.slice(0, end).map(({ message, delegation }): ChatMessage => {
    if (delegation !== null && masked.has(delegation)) return { ...shownPlaceholder };
    return { role: message.chatRole, content: message.text };
  });
  return { messages, opener: answerOpener(protocol) };
}
