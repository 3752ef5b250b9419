import type { ChatTurn } from './tokenizer.ts';

/**
 * The one rendering of a conversation into prompt ids, shared by generation (the policy's prompt)
 * and training (the context a trained turn is re-scored in), so both see the same tokens by
 * construction. Template variables such as Qwen3's enable_thinking belong to the tokenizer
 * (Tokenizer.chatVariables), so no caller can render with different ones.
 */
export interface ChatEncoder {
  encodeChat(messages: readonly ChatTurn[], opts: { addGenerationPrompt: boolean }): number[];
}

/** Prompt token ids of a conversation, ending with the assistant generation prompt. */
export function renderPromptIds(enc: ChatEncoder, messages: readonly ChatTurn[]): number[] {
  return enc.encodeChat(messages, { addGenerationPrompt: true });
}
