import type { ChatMessage, Trajectory } from '../../rollout/types.ts';
import { agentContext } from '../../rollout/record.ts';
import { cachedPromptIds } from '../../rollout/prompt-cache.ts';
import type { Transcript } from '../../rollout/transcripts.ts';
import type { PreferencePair } from '../../credit/first-error.ts';
import { renderPromptIds, type ChatEncoder } from '../../tokenizer/chat-prompt.ts';
import { UserError } from '../../errors.ts';

/**
 * Training sequences from what the rollout, expert and credit modules record.
 * Every sequence is one assistant turn in the exact context the policy saw when it generated it:
 *   ids       = prompt ids (the agent's earlier messages through the chat template, with the
 *               generation prompt; tokenizer/chat-prompt.ts's renderPromptIds, the function
 *               the LM policy renders with) ++ the turn's tokens
 *   trainMask = 0 on every prompt token (system, user, tool results, chat-template markers), 1 on
 *               the turn's tokens (an SFT transcript message's loss `weight` instead of 1 when set).
 * One sequence per turn (rather than one per agent) is exact for any chat template, including ones
 * that rewrite earlier turns (Qwen3 drops past <think> blocks), at the cost of re-reading the prefix.
 */
export interface SftSequence {
  ids: number[];
  /** 0 = not trained; otherwise the token's loss weight (1 unless a transcript message sets `weight`). */
  trainMask: number[];
}

/** What sequence building needs of a tokenizer (src/tokenizer's Tokenizer fits). */
export type { ChatEncoder };

/**
 * Token ids of an assistant reply `content` after `context`, as the template renders a finished
 * turn (end-of-turn marker included, so the model learns to stop): the full rendering minus the
 * generation prompt. A template whose finished turn does not extend its generation prompt cannot
 * be split this way: one-line error. Qwen3 is consistent with enable_thinking false (the
 * tokenizer's default, Tokenizer.chatVariables) and with thinking on; it is not when a reply
 * carries its own <think> block under enable_thinking false (the template keeps it, the prompt
 * already closed an empty one) or when the context has no user query (the template then renders
 * the last turn without the empty think block).
 */
export function completionIds(
  enc: ChatEncoder,
  context: readonly ChatMessage[],
  content: string,
): { prompt: number[]; completion: number[] } {
  const prompt = renderPromptIds(enc, context);
  const full = enc.encodeChat([...context, { role: 'assistant', content }], { addGenerationPrompt: false });
  const extends_ = full.length > prompt.length && prompt.every((t, i) => full[i] === t);
  if (!extends_) {
    const at = prompt.findIndex((t, i) => full[i] !== t);
    throw new UserError(
      `sequences: the chat template renders a finished assistant turn (after ${context.length} messages) that ` +
        `does not start with its generation prompt (they differ at token ${at}), so the reply cannot be split off ` +
        `for training; with Qwen3, keep <think> blocks out of replies when enable_thinking is false`,
    );
  }
  return { prompt, completion: full.slice(prompt.length) };
}

/** `weight`: the completion tokens' loss weight (1 unless an SFT message sets one). */
function sequenceOf(prompt: number[], completion: number[], weight = 1): SftSequence {
  return { ids: [...prompt, ...completion], trainMask: [...prompt.map(() => 0), ...completion.map(() => weight)] };
}

/**
 * The one GRPO training sequence (what the batch builds and the update trains on): an SFT sequence
 * (trainMask 1 on the agent's generated tokens, trainMask[0] = 0) plus the sampling logprobs and
 * the agent's advantage A(i, m), which every trained token carries unless tokenAdv is set.
 */
export interface RlSequence extends SftSequence {
  /** Sampling log-prob of ids[t] where trainMask[t] = 1 (0 elsewhere); pi_old when train.oldLogp = 'sampling'. */
  sampleLogp: number[];
  adv: number;
  /** Per-token advantages (same length as ids, read where trainMask > 0; credit.messageLevel's `messageAdv`). */
  tokenAdv?: number[];
  /** Where it came from (its first turn), for debugging and logging. */
  source: { trajectory: string; agent: number; message: number };
}

/**
 * Every generated turn of a trajectory with the advantage of its agent (`adv[agentId]`): the
 * recorded token ids and sampling logprobs, after the re-rendered context.
 *
 * Packing (default on): an agent's turns share one sequence whenever that is exact, i.e. when the
 * prompt the policy saw for turn k starts with [prompt of turn k-1 ++ tokens of turn k-1] (true for
 * ChatML when the sampled tokens re-encode to themselves). A causal LM then sees at every trained
 * position exactly the context it was sampled with, and the shared prefix is computed once instead
 * of once per turn. Where the check fails (a template that rewrites history, a non-canonical
 * tokenisation), that turn starts a new sequence.
 *
 * `messageAdv` (message index -> advantage, credit.messageLevel): the sequences also carry
 * per-token advantages, each turn's tokens that of their message (the agent's where it has none).
 */
export function trajectorySequences(
  traj: Trajectory,
  adv: readonly number[],
  enc: ChatEncoder,
  opts: { pack?: boolean; messageAdv?: ReadonlyMap<number, number> } = {},
): RlSequence[] {
  const pack = opts.pack ?? true;
  const msgAdv = opts.messageAdv;
  const out: RlSequence[] = [];
  const open = new Map<number, RlSequence>(); // agent -> sequence being extended
  for (const m of traj.messages) {
    if (m.chatRole !== 'assistant' || m.tokenIds.length === 0) continue;
    const a = adv[m.agent];
    if (a === undefined) throw new Error(`sequences: trajectory ${traj.id} has no advantage for agent ${m.agent}`);
    if (m.logprobs.length !== m.tokenIds.length) {
      throw new Error(
        `sequences: trajectory ${traj.id} message ${m.index} has ${m.logprobs.length} logprobs for ` +
          `${m.tokenIds.length} tokens`,
      );
    }
    // The engine's own reconstruction of what the agent saw (its messages before this one).
    const prompt = cachedPromptIds(enc, agentContext(traj, m.agent, m.index)); // the policy rendered it this step
    const prev = pack ? open.get(m.agent) : undefined;
    if (prev && prev.ids.length <= prompt.length && prev.ids.every((t, i) => prompt[i] === t)) {
      const gap = prompt.slice(prev.ids.length); // tool result, template markers, new generation prompt
      prev.ids.push(...gap, ...m.tokenIds);
      prev.trainMask.push(...gap.map(() => 0), ...m.tokenIds.map(() => 1));
      prev.sampleLogp.push(...gap.map(() => 0), ...m.logprobs);
      if (prev.tokenAdv) prev.tokenAdv.push(...gap.map(() => 0), ...m.tokenIds.map(() => msgAdv?.get(m.index) ?? a));
      continue;
    }
    const seq: RlSequence = {
      ...sequenceOf(prompt, m.tokenIds),
      sampleLogp: [...prompt.map(() => 0), ...m.logprobs],
      adv: a,
      ...(msgAdv ? { tokenAdv: [...prompt.map(() => 0), ...m.tokenIds.map(() => msgAdv.get(m.index) ?? a)] } : {}),
      source: { trajectory: traj.id, agent: m.agent, message: m.index },
    };
    out.push(seq);
    open.set(m.agent, seq);
  }
  return out;
}

/**
 * The trained messages of an SFT transcript (`train: true`, assistant only) as sequences. Packing
 * (default on), as in `trajectorySequences`: a turn extends the previous turn's sequence whenever
 * its prompt starts with that sequence (exact for ChatML-like templates), so a whole transcript is
 * one sequence with the loss on its assistant tokens; otherwise the turn starts a new sequence.
 */
export function transcriptSequences(t: Transcript, enc: ChatEncoder, opts: { pack?: boolean } = {}): SftSequence[] {
  const pack = opts.pack ?? true;
  const out: SftSequence[] = [];
  let prev: SftSequence | undefined;
  t.messages.forEach((m, k) => {
    if (!m.train) return;
    if (m.role !== 'assistant')
      throw new Error(
        `sequences: transcript message ${k} has train = true but role '${m.role}' (only assistant turns are trained)`,
      );
    const context = t.messages.slice(0, k).map((c) => ({ role: c.role, content: c.content }));
    const { prompt, completion } = completionIds(enc, context, m.content);
    const w = m.weight ?? 1;
    if (pack && prev && prev.ids.length <= prompt.length && prev.ids.every((id, i) => prompt[i] === id)) {
      const gap = prompt.slice(prev.ids.length); // tool result, template markers, new generation prompt
      prev.ids.push(...gap, ...completion);
      prev.trainMask.push(...gap.map(() => 0), ...completion.map(() => w));
      return;
    }
    prev = sequenceOf(prompt, completion, w);
    out.push(prev);
  });
  return out;
}

/** A DPO pair as two sequences sharing the prompt. */
export interface PairSequences {
  chosen: SftSequence;
  rejected: SftSequence;
}

export function pairSequences(p: PreferencePair, enc: ChatEncoder): PairSequences {
  const c = completionIds(enc, p.prefix, p.chosen);
  const r = completionIds(enc, p.prefix, p.rejected);
  return { chosen: sequenceOf(c.prompt, c.completion), rejected: sequenceOf(r.prompt, r.completion) };
}

/** Drops sequences longer than `maxTokens` (a context limit), returning how many were dropped. */
export function capLength<T extends SftSequence>(
  seqs: readonly T[],
  maxTokens: number,
): { kept: T[]; dropped: number } {
  const kept = seqs.filter((s) => s.ids.length <= maxTokens);
  return { kept, dropped: seqs.length - kept.length };
}
