import type { Trajectory } from '../rollout/types.ts';
import type { AgentCredit } from './reward.ts';

/**
 * Message-level shares of an agent's credit ("Who Gets the
 * Reward & Who Gets the Blame?"). A judge labels each generated message t of agent m with
 * s_t in {-1, 0, +1}, or leaves it unjudged (the rule judge, for one, judges delegations and
 * answers, not tool calls). With C the agent's credit, T its message count, J its judged messages
 * and s_bar = mean_{t in J} s_t:
 *
 *   r_t = C / T + beta * |C| * (s_t - s_bar) / T     for t in J,
 *   r_t = C / T                                        for an unjudged t.
 *
 * Why this form:
 * - Conservation: sum_{t in J} (s_t - s_bar) = 0, so sum_t r_t = C exactly (up to float rounding), and the
 *   per-agent reward the trainer normalises is unchanged by splitting it.
 * - Signed and ordered: a message labelled better gets strictly more (beta > 0, C != 0) whatever the
 *   sign of C: in a success the good messages take the credit and a bad one can go negative; in a
 *   failure the bad messages take the blame and a good one can come out positive.
 * - Bounded: |s_t - s_bar| <= 2 (T-1)/T < 2, so |r_t| <= (1 + 2 beta) |C| / T: no message gets more
 *   than a fixed multiple of its even share, so one label cannot blow up an advantage.
 * - Neutral by default: all labels equal (e.g. all 0) gives the even split C / T; C = 0 gives 0 to all
 *   (labels redistribute credit, they do not create it).
 * - Only judged messages trade credit: an unjudged message keeps its even share. Counting it as 0
 *   would move credit from every tool call to every accepted answer (and the reverse for blamed
 *   ones) on no judgement at all; label 0 is a judgement ("neither"), unjudged is none.
 */
export type Label = -1 | 0 | 1;

export interface MessageReward {
  trajectoryId: string;
  /** Index into Trajectory.messages. */
  messageIndex: number;
  agent: number;
  label: Label;
  reward: number;
}

/** r_t for one agent (undefined = an unjudged message); [] when T = 0. */
export function messageShares(credit: number, labels: readonly (Label | undefined)[], beta: number): number[] {
  if (!(beta >= 0)) throw new Error(`credit.messageShareBeta: ${beta} must be >= 0`);
  const t = labels.length;
  if (t === 0) return [];
  let sum = 0;
  let judged = 0;
  for (const s of labels) {
    if (s === undefined) continue;
    if (s !== -1 && s !== 0 && s !== 1) throw new Error(`message label ${String(s)} is not -1, 0 or +1`);
    sum += s;
    judged++;
  }
  const mean = judged === 0 ? 0 : sum / judged;
  return labels.map((s) => credit / t + (s === undefined ? 0 : (beta * Math.abs(credit) * (s - mean)) / t));
}

/** The stated bound (1 + 2 beta) |C| / T on |r_t|. */
export function shareBound(credit: number, count: number, beta: number): number {
  return count === 0 ? 0 : ((1 + 2 * beta) * Math.abs(credit)) / count;
}

/**
 * Per-message rewards of every agent of a trajectory: the agent's generated (assistant) messages
 * share its `total`. A message without a label is unjudged (its even share; recorded as label 0). An agent with no
 * generated message keeps its credit at agent level only (nothing to attach it to); the trainer gives it no tokens
 * anyway.
 */
export function trajectoryMessageRewards(
  traj: Trajectory,
  credits: readonly AgentCredit[],
  labels: ReadonlyMap<number, Label>,
  beta: number,
): MessageReward[] {
  const out: MessageReward[] = [];
  for (const c of credits) {
    if (c.trajectoryId !== traj.id) continue;
    const msgs = traj.messages.filter((m) => m.agent === c.agent && m.chatRole === 'assistant');
    const ls = msgs.map((m) => labels.get(m.index));
    const shares = messageShares(c.total, ls, beta);
    msgs.forEach((m, i) =>
      out.push({ trajectoryId: traj.id, messageIndex: m.index, agent: c.agent, label: ls[i] ?? 0, reward: shares[i] }),
    );
  }
  return out;
}
