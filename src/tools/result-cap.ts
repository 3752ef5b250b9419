import type { ToolOutcome } from './types.ts';

/**
 * The most characters one tool result may add to an agent's prompt, whatever the tool (the built-in
 * ones, a custom tool factory, a worker's report). Each tool has its own finer limit
 * (`rollout.search.topK` x `maxChars`, `rollout.code.maxOutputChars`, calculate's element bound); this
 * one keeps a tool that ignores them (or a limit set very high) from putting megabytes into a prompt
 * that every later turn re-tokenizes. 16,384 characters is past the longest default result (the
 * code tool's 2,000) and past any 1,024-token context of the default config.
 */
export const MAX_TOOL_RESULT_CHARS = 16_384;

/** `outcome` with its output cut to MAX_TOOL_RESULT_CHARS characters and a note that says so. */
export function capToolResult<T extends ToolOutcome>(outcome: T): T {
  if (outcome.output.length <= MAX_TOOL_RESULT_CHARS) return outcome;
  return {
    ...outcome,
    output:
      `${outcome.output.slice(0, MAX_TOOL_RESULT_CHARS)}\n[tool result truncated at ${MAX_TOOL_RESULT_CHARS} ` +
      `characters]`,
  };
}
