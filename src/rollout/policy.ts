import type { Episode } from '../data/episode.ts';
import type { ProtocolName } from './protocol/index.ts';
import type { ChatMessage, Role } from './types.ts';

/**
 * What the engine asks of a policy: context messages in, one assistant message out. The LM policy
 * (rollout/lm-policy.ts, over generation/) and scripted policies (rollout/scripted/, tests) both implement it, so the
 * engine, the credit module's replays and tests can drive either. Requests come in batches: every agent that is
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
  /** Who asks, for scripted policies (the episode, agent, turn, earlier results); the LM ignores it. */
  meta?: RequestMeta;
}

/** What a policy request carries in `meta` (scripted policies read it; the LM ignores it). */
export type RequestMeta = {
  episode: Episode;
  trajectoryId: string;
  sample: number;
  agent: number;
  role: Role;
  /** Delegation number of a worker; null for the planner. */
  delegation: number | null;
  subtask?: string;
  /** Index of the message being generated among this agent's assistant messages. */
  turn: number;
  protocol: ProtocolName;
  /**
   * Delegations one message may carry when more than one (rollout.maxParallelDelegations); absent: one call per
   * message.
   */
  maxParallel?: number;
  /** This agent's earlier tool calls in order, with what it was shown (for the planner: the reports). */
  results: { name: string; valid: boolean; output: string; retrievedIdx?: number[] }[];
};

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
