import { renderPromptIds, type ChatEncoder } from '../tokenizer/chat-prompt.ts';
import type { ChatTurn } from '../tokenizer/tokenizer.ts';

/**
 * renderPromptIds (tokenizer/chat-prompt.ts) remembered per encoder for the most recently used
 * conversations, up to PROMPT_CACHE_BYTES of keys and ids. One GRPO step renders the same
 * conversation many times: the samples of a group share their first prompts, every replay of a
 * coalition renders the same masked context, and the trainer's sequences re-render each context
 * the policy saw. The prompt is a pure function of the messages (the encoder's template variables
 * are fixed), so a hit returns exactly the ids a fresh rendering would; the key is the messages'
 * JSON, every field included.
 */
const PROMPT_CACHE_BYTES = 64 * 2 ** 20;

interface Cache {
  entries: Map<string, Int32Array>;
  bytes: number;
}

const caches = new WeakMap<ChatEncoder, Cache>();

/** What an entry holds: the key's UTF-16 characters and the ids. */
const entryBytes = (key: string, ids: Int32Array): number => 2 * key.length + ids.byteLength;

/** Prompt ids of a conversation, as renderPromptIds gives them (a fresh array the caller owns). */
export function cachedPromptIds(enc: ChatEncoder, messages: readonly ChatTurn[]): number[] {
  let cache = caches.get(enc);
  if (!cache) caches.set(enc, (cache = { entries: new Map(), bytes: 0 }));
  const key = JSON.stringify(messages);
  const hit = cache.entries.get(key);
  if (hit) {
    cache.entries.delete(key); // most recently used last: a Map keeps insertion order
    cache.entries.set(key, hit);
    return Array.from(hit);
  }
  const ids = renderPromptIds(enc, messages);
  const stored = Int32Array.from(ids);
  cache.entries.set(key, stored);
  cache.bytes += entryBytes(key, stored);
  for (const [k, v] of cache.entries) {
    if (cache.bytes <= PROMPT_CACHE_BYTES || k === key) break;
    cache.entries.delete(k);
    cache.bytes -= entryBytes(k, v);
  }
  return ids;
}
