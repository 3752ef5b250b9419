/**
 * Text helpers shared by the protocols: thinking blocks (Qwen3 `<think>`) are not actions, so they are
 * removed before a message is classified.
 */

/** Removes closed `<think>...</think>` blocks and an unclosed `<think>` to the end of the text. */
export function stripThinking(text: string): string {
  let out = text.replace(/<think>[\s\S]*?<\/think>/g, ' ');
  const open = out.indexOf('<think>');
  if (open >= 0) out = out.slice(0, open);
  return out;
}

/** First `limit` characters of a string for error messages, on one line. */
export function preview(text: string, limit = 40): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > limit ? `${one.slice(0, limit)}...` : one;
}
