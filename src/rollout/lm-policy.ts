/**
 * The LM as a rollout Policy (src/rollout/policy.ts): each request's messages are rendered by
 * renderPromptIds (src/tokenizer/chat-prompt.ts, the rendering the trainer re-scores with; through
 * prompt-cache.ts, as the trainer's sequences), and
 * every request of the call is decoded in one batched generate(): every agent generating at a
 * step is served by one call. Every LmPolicy of one model shares the process's KV prefix cache
 * (generation/prefix-cache.ts, rollout.prefixCacheMiB), so the rollout's, the replays' and the
 * judge's policies of a step reuse each other's keys and values until the weights change. A new
 * LmPolicy empties it: which prefixes are cached changes the float rounding of a hit, so what a step
 * (or a held-out measurement) computes must not depend on what ran before it, and a resumed run
 * must equal an uninterrupted one even across a step that made no update.
 */
import type { CausalLM } from '../model/causal-lm.ts';
import type { Rng } from '../random/rng.ts';
import type { Policy, PolicyRequest, PolicyResponse } from './policy.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import { generate, type GenerateRequest } from '../generation/generate.ts';
import { checkSampling, type SamplingParams } from '../generation/sampling.ts';
import { prefixCacheFor } from '../generation/prefix-cache.ts';
import { cachedPromptIds } from './prompt-cache.ts';

export interface LmPolicyOptions extends SamplingParams {
  /** Context limit in tokens (prompt + generated), e.g. rollout.maxContext. */
  maxContext: number;
  rng: Rng;
  /** Shared-prompt-prefix reuse threshold in tokens (generate's prefixMinTokens; 0 = off; default 16). */
  prefixMinTokens?: number;
}

/** Sampling settings at temperature t: greedy (t = 0) ignores top-k and top-p. */
export function samplingAt(t: number, base: { topK: number; topP: number }): SamplingParams {
  return { temperature: t, topK: t > 0 ? base.topK : 0, topP: t > 0 ? base.topP : 1 };
}

/** A PolicyResponse plus whether the context limit cut this turn short (or left no room at all). */
export interface LmPolicyResponse extends PolicyResponse {
  contextOverflow: boolean;
}

export class LmPolicy implements Policy {
  constructor(
    private readonly model: CausalLM,
    private readonly tokenizer: Tokenizer,
    private readonly opts: LmPolicyOptions,
  ) {
    checkSampling(opts);
    if (!Number.isInteger(opts.maxContext) || opts.maxContext < 2)
      throw new Error(`LmPolicy: maxContext must be an integer >= 2 (got ${opts.maxContext})`);
    prefixCacheFor(model)?.clear();
  }

  async generate(requests: PolicyRequest[]): Promise<LmPolicyResponse[]> {
    const prompts = requests.map((r) => cachedPromptIds(this.tokenizer, r.messages));
    // The budget is cut to what the context leaves; a prompt that fills it gets no tokens. The prompt
    // itself is never truncated: dropping turns would change the conversation behind the agent's back,
    // so the engine sees contextOverflow and ends the agent (EndReason 'max_context').
    const budgets = requests.map((r, i) => {
      const room = Math.max(0, this.opts.maxContext - (prompts[i] as number[]).length);
      return r.forcedTokens ? r.forcedTokens.length : Math.min(r.maxNewTokens, room);
    });
    const gen: GenerateRequest[] = requests.map((r, i) => ({
      promptIds: prompts[i] as number[],
      maxNewTokens: budgets[i] as number,
      stop: r.stop,
      forcedTokens: r.forcedTokens,
      seed: r.seed,
    }));
    const out = await generate(this.model, gen, {
      temperature: this.opts.temperature,
      topK: this.opts.topK,
      topP: this.opts.topP,
      rng: this.opts.rng,
      eosIds: this.tokenizer.eosIds,
      padId: this.tokenizer.padId,
      decoder: this.tokenizer,
      prefixMinTokens: this.opts.prefixMinTokens,
      prefixCache: prefixCacheFor(this.model),
    });
    return out.map((g, i) => {
      const r = requests[i] as PolicyRequest;
      const promptTokens = (prompts[i] as number[]).length;
      const cut = !r.forcedTokens && (budgets[i] as number) < r.maxNewTokens && g.finishReason === 'length';
      return {
        text: g.text,
        tokenIds: g.tokenIds,
        logprobs: g.logprobs,
        finishReason: g.finishReason,
        promptTokens,
        contextOverflow: cut,
      };
    });
  }
}
