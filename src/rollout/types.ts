/**
 * What a rollout records. The credit module and the trainer read only these
 * types; the engine fills them. Fields may be added, never renamed.
 */

export type Role = 'planner' | 'worker';

/** Chat role of a message as the chat template sees it. */
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

/** One parsed tool call of an assistant message. */
export interface ToolCall {
  /** Tool name as written by the agent (may be unknown: then `valid` is false). */
  name: string;
  /** Raw argument text (tags protocol) or JSON-encoded arguments (json protocol). */
  args: string;
  /** True when the call parsed, named a tool this role may use, and executed without error. */
  valid: boolean;
  /** Why the call was invalid (parse error, unknown tool, tool error); absent when valid. */
  error?: string;
  /** Text returned to the agent (tool output, or the error message). */
  result?: string;
  /** `search` only: paragraph idx values returned, in rank order. */
  retrievedIdx?: number[];
  /** `search` over a corpus (index, remote backends) only: the corpus ids returned, in rank order. */
  retrievedIds?: string[];
  /** `delegate` only: index into Trajectory.agents of the worker this call spawned. */
  workerAgent?: number;
  /** `delegate` only, replays only: the report was replaced by the placeholder (no worker ran). */
  masked?: boolean;
}

/** Why an agent stopped. */
export type EndReason =
  | 'answer' // gave a final answer
  | 'max_turns'
  | 'max_delegations'
  | 'max_context'
  | 'max_new_tokens'
  | 'no_action' // produced neither a tool call nor an answer
  | 'error';

export interface Message {
  /** Position in Trajectory.messages. */
  index: number;
  /** Index into Trajectory.agents. */
  agent: number;
  role: Role;
  chatRole: ChatRole;
  text: string;
  /** Generated token ids (assistant messages only; empty otherwise). */
  tokenIds: number[];
  /** Log-probability of each generated token under the sampling policy (same length as tokenIds). */
  logprobs: number[];
  toolCalls: ToolCall[];
  /** Why generation of this message stopped (assistant messages only). */
  finishReason?: 'stop' | 'eos' | 'length';
}

export interface AgentRecord {
  /** Index in Trajectory.agents; the planner is 0. */
  id: number;
  role: Role;
  /** For workers: the delegation number (0-based, in order of delegation) that spawned it. */
  delegation: number | null;
  /** For workers: the subtask text the planner delegated. */
  subtask?: string;
  /** The agent's final answer (a worker's report to the planner), or null when it ended without one. */
  answer: string | null;
  endReason: EndReason;
}

export interface Trajectory {
  id: string;
  episodeId: string;
  /** Index of this trajectory in its group of G. */
  sample: number;
  messages: Message[];
  agents: AgentRecord[];
  /** The planner's final answer (null when it never answered). */
  finalAnswer: string | null;
}
