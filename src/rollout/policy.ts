import type { ChatMessage, Role } from './types.ts';

/**
 * What the engine asks of a policy: context messages in, one assistant message out. The LM policy
 * (src/generation) and scripted policies (the expert, tests) both implement it, so the engine, the
 * credit module's replays and tests can drive either. Requests come in batches: every agent that is
 * generating at a decoding step, across trajectories and roles, is served by one call.
 */
export interface PolicyRequest {
  /** Stable key of the agent within the batch (e.g. `${trajectoryId}/${agent}`), for scripted policies. */
  key: string;
  role: Role;
  /** Full context: system prompt, user/task, earlier assistant turns and tool results. */
  messages: ChatMessage[];
  /** Generation stops after any of these strings (included in the text). */
  stop: string[];
  maxNewTokens: number;
  /** When set, the policy must emit exactly these tokens (replay of recorded sampling choices). */
  forcedTokens?: number[];
  /** A sampling stream of the request's own (replays: common random numbers); absent = the policy's stream. */
  seed?: number;
  /** Free-form context for scripted policies (the episode, agent index); the LM ignores it. */
  meta?: Record<string, unknown>;
}

export interface PolicyResponse {
  text: string;
  /** Generated token ids (empty for a scripted policy without a tokenizer). */
  tokenIds: number[];
  /** Sampling log-probability of each generated token. */
  logprobs: number[];
  finishReason: 'stop' | 'eos' | 'length';
  /** Prompt length in tokens (for context-limit accounting); 0 when unknown. */
  promptTokens: number;
}

export interface Policy {
  generate(requests: PolicyRequest[]): Promise<PolicyResponse[]>;
}
