import { renderPromptIds, type ChatEncoder } from '../tokenizer/chat-prompt.ts';
import type { ChatTurn } from '../tokenizer/tokenizer.ts';

/**
 * renderPromptIds (tokenizer/chat-prompt.ts) remembered per encoder for the most recent
 * PROMPT_CACHE_SIZE conversations. One GRPO step renders the same conversation many times: the
 * samples of a group share their first prompts, every replay of a coalition renders the same
 * masked context, and the trainer's sequences re-render each context the policy saw. The prompt is
 * a pure function of the messages (the encoder's template variables are fixed), so a hit returns
 * exactly the ids a fresh rendering would; the key is the messages' JSON, every field included.
 */
const PROMPT_CACHE_SIZE = 4096;

const caches = new WeakMap<ChatEncoder, Map<string, readonly number[]>>();

/** Prompt ids of a conversation, as renderPromptIds gives them (a fresh array the caller owns). */
export function cachedPromptIds(enc: ChatEncoder, messages: readonly ChatTurn[]): number[] {
  let cache = caches.get(enc);
  if (!cache) caches.set(enc, (cache = new Map()));
  const key = JSON.stringify(messages);
  let ids = cache.get(key);
  if (ids) {
    cache.delete(key); // most recently used last: Map keeps insertion order
  } else {
    ids = renderPromptIds(enc, messages);
    if (cache.size >= PROMPT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  }
  cache.set(key, ids);
  return [...ids];
}
