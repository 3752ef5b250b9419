import type { Message } from '../../rollout/types.ts';
import type { Label } from '../message-shares.ts';
import type { Judge, JudgeContext } from './types.ts';

/**
 * LLM judge: asks a model a yes/no question about the transcript and compares the
 * log-probabilities of the "yes" and "no" continuations. The model is reached through an injected
 * scoring function, so the same judge runs on the policy, another checkpoint, or a test double of
 * the scorer (not of the judge). A model's prefix verdicts need not be monotone in the prefix length;
 * the binary search in first-error.ts then returns a prefix boundary where the verdict flips (still
 * within ceil(log2 T) + 1 calls), which is the usual approximation of judge-based localisation.
 */
export type CandidateScorer = (prompt: string, candidates: readonly string[]) => Promise<number[]>;

export interface LlmJudgeOptions {
  score: CandidateScorer;
  /** Candidate continuations for yes / no (a leading space matches most BPE vocabularies). */
  yes?: string;
  no?: string;
  /** |logp(yes) - logp(no)| below this labels a message 0 (undecided). */
  margin?: number;
  /** Show the gold answer to the judge (training-time judges may use privileged information). */
  showGold?: boolean;
  /** Characters of each message kept in the transcript (bounds the prompt length). */
  maxMessageChars?: number;
}

function transcript(messages: readonly Message[], maxChars: number): string {
  return messages
    .map((m) => {
      const who = m.chatRole === 'assistant' ? `${m.role} ${m.agent}` : m.chatRole;
      const text = m.text.length > maxChars ? `${m.text.slice(0, maxChars)}...` : m.text;
      return `[${m.index}] ${who}: ${text}`;
    })
    .join('\n');
}

export function llmJudge(opts: LlmJudgeOptions): Judge {
  const yes = opts.yes ?? ' yes';
  const no = opts.no ?? ' no';
  const margin = opts.margin ?? 0;
  const maxChars = opts.maxMessageChars ?? 400;
  const header = (ctx: JudgeContext): string => {
    const gold = opts.showGold === false ? '' : `Correct final answer: ${ctx.episode.answers[0] ?? '(none)'}\n`;
    return `You check a team of agents answering a question.\nQuestion: ${ctx.episode.question}\n${gold}Transcript:\n`;
  };
  /** logp(yes) - logp(no) for one prompt. */
  const preference = async (prompt: string): Promise<number> => {
    const lp = await opts.score(prompt, [yes, no]);
    if (lp.length !== 2 || !lp.every(Number.isFinite))
      throw new Error(`llm judge: scorer returned ${JSON.stringify(lp)} for 2 candidates`);
    return lp[0] - lp[1];
  };
  const prefixPrompt = (ctx: JudgeContext, end: number): string =>
    `${header(ctx)}${transcript(ctx.traj.messages.slice(0, end + 1), maxChars)}\nHas any message above made an ` +
    `error (a wrong fact, a wrong report or a wrong answer)? Answer yes or no.\nAnswer:`;
  const messagePrompt = (ctx: JudgeContext, index: number, text: string): string => {
    const msg = ctx.traj.messages[index];
    const last = { ...msg, text };
    return (
      `${header(ctx)}${transcript([...ctx.traj.messages.slice(0, index), last], maxChars)}\nIs the last message ` +
      `[${index}] correct and helpful? Answer yes or no.\nAnswer:`
    );
  };
  return {
    name: 'llm',
    async prefixFailed(ctx, end) {
      if (!Number.isInteger(end) || end < 0 || end >= ctx.traj.messages.length)
        throw new Error(
          `llm judge: prefix end ${end} outside messages 0..${ctx.traj.messages.length - 1} of ${ctx.traj.id}`,
        );
      return (await preference(prefixPrompt(ctx, end))) > 0;
    },
    async labelMessages(ctx) {
      const gen = ctx.traj.messages.filter((m) => m.chatRole === 'assistant');
      const prefs = await Promise.all(gen.map((m) => preference(messagePrompt(ctx, m.index, m.text))));
      const out = new Map<number, Label>();
      gen.forEach((m, i) => out.set(m.index, prefs[i] > margin ? 1 : prefs[i] < -margin ? -1 : 0));
      return out;
    },
    async acceptsAlternative(ctx, index, text) {
      if (ctx.traj.messages[index]?.chatRole !== 'assistant')
        throw new Error(`llm judge: message ${index} of ${ctx.traj.id} is not a generated message`);
      return (await preference(messagePrompt(ctx, index, text))) > margin;
    },
  };
}
