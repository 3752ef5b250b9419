import type { ChatMessage } from '../types.ts';
import type { ToolSpec } from './tool-specs.ts';

/**
 * A tool-call protocol: how tools are described to an agent, how its message is
 * read, and how results are shown back. Variants live in the registry (protocol/index.ts), chosen once
 * from `rollout.protocol`.
 */
export type ProtocolName = 'tags' | 'json';

/**
 * What one assistant message does. `parse` never throws: every string maps to exactly one of these.
 * - call: one well-formed call of a known tool (the engine still checks the role may use it); `name`
 *   is a built-in action other than `answer`, or a user tool of the protocol's catalog, whose `args`
 *   fit its schema (tool-catalog.ts);
 * - calls: several well-formed calls of known tools (the engine runs them only when all are
 *   delegations of an agent allowed to delegate side by side; otherwise it is an invalid call);
 * - answer: a final answer;
 * - invalid: a malformed attempt (unclosed tag, several calls, unknown tool, bad JSON, empty argument,
 *   text without any action); recorded as an invalid tool call and answered with `error`;
 * - none: an empty message (nothing to answer; the agent ends with `no_action`).
 */
export type ParsedAction =
  | { kind: 'call'; name: string; args: string; rawArgs: string }
  | { kind: 'calls'; calls: { name: string; args: string; rawArgs: string }[] }
  | { kind: 'answer'; text: string }
  | { kind: 'invalid'; error: string; name: string; rawArgs: string }
  | { kind: 'none' };

export interface Protocol {
  readonly name: ProtocolName;
  /**
   * Role prompt followed by the tool descriptions in this protocol's syntax; `parallel` > 1 tells
   * the agent that up to that many delegations may go in one message.
   */
  systemPrompt(rolePrompt: string, tools: readonly ToolSpec[], parallel?: number): string;
  /** Classifies an assistant message (never throws). `args` is the text handed to the tool. */
  parse(text: string): ParsedAction;
  /** The message that shows a tool output (or error) to the agent. */
  formatResult(output: string): ChatMessage;
  /** Inverse of formatResult's content (for scripted policies reading their context). */
  unwrapResult(content: string): string;
  /** A well-formed call, as an agent should write it (scripted policies, tests). */
  formatCall(name: string, input: string): string;
  /** One message with several well-formed calls (parallel delegations), as an agent should write it. */
  formatCalls(calls: readonly { name: string; input: string }[]): string;
  /** A well-formed final answer. */
  formatAnswer(text: string): string;
  /** Generation stops after any of these (they close a call or an answer). */
  readonly stop: readonly string[];
  /** The stops of an agent that may write several delegations in one message: only the answer's close. */
  readonly parallelStop: readonly string[];
}
