import type { ChatTurn } from './tokenizer.ts';

/**
 * The results of parallel calls as Qwen3's chat template renders them: consecutive tool messages
 * become ONE user turn of `<tool_response>` blocks joined by a newline. The json protocol writes
 * each result as a user message already wrapped in `<tool_response>` (rollout/protocol/json.ts), so
 * adjacent wrapped messages are joined here before any template sees them: a single result renders
 * as before, several render as the native template renders role-`tool` messages, and generation
 * and training (both through Tokenizer.encodeChat) see the same turns.
 */
const WRAPPED = /^<tool_response>\n[\s\S]*\n<\/tool_response>$/;

export function joinToolResponses(messages: readonly ChatTurn[]): ChatTurn[] {
  const out: ChatTurn[] = [];
  for (const m of messages) {
    const last = out.at(-1);
    if (last && m.role === 'user' && last.role === 'user' && WRAPPED.test(m.content) && WRAPPED.test(last.content)) {
      out[out.length - 1] = { ...last, content: `${last.content}\n${m.content}` };
    } else out.push(m);
  }
  return out;
}
