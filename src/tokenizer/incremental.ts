/**
 * Incremental detokenisation for streaming and stop strings. Decoding the whole
 * sequence after every token costs O(T) per token; this decodes a short window instead, the
 * prefix/read-offset scheme of Hugging Face TGI and vLLM (`detokenize_incrementally`): text is
 * released only once it no longer ends in U+FFFD, i.e. once a multi-byte character split across
 * byte-level tokens is complete. Decoders that strip a leading space (SentencePiece's `Strip`) strip it
 * from both windows alike, so the difference is exact.
 */

/** What the decoder needs from a tokenizer (Tokenizer satisfies it). */
export interface Decodes {
  decode(ids: readonly number[], opts?: { skipSpecialTokens?: boolean }): string;
}

export class IncrementalDecoder {
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;
  private out = '';

  constructor(
    private readonly tok: Decodes,
    private readonly opts: { skipSpecialTokens?: boolean } = {},
  ) {}

  /** Adds one token; returns the text it completes (often '', or several characters at once). */
  push(id: number): string {
    this.ids.push(id);
    const prefixText = this.tok.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.opts);
    const newText = this.tok.decode(this.ids.slice(this.prefixOffset), this.opts);
    if (newText.length <= prefixText.length || newText.endsWith('\uFFFD')) return '';
    const delta = newText.slice(prefixText.length);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    this.out += delta;
    return delta;
  }

  /** Releases whatever is held back (an incomplete character decodes as U+FFFD, as a full decode would). */
  flush(): string {
    if (this.readOffset === this.ids.length) return '';
    const prefixText = this.tok.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.opts);
    const delta = this.tok.decode(this.ids.slice(this.prefixOffset), this.opts).slice(prefixText.length);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    this.out += delta;
    return delta;
  }

  /** All text released so far. */
  get text(): string {
    return this.out;
  }

  /** Number of tokens pushed. */
  get length(): number {
    return this.ids.length;
  }
}

/**
 * Earliest occurrence of any stop string in `text` that ends after `newFrom` (the text length
 * before the latest delta), so each call only scans the new text plus the longest stop's overlap.
 * Returns the index where the stop begins and which stop matched, or undefined.
 */
export function findStop(
  text: string,
  stops: readonly string[],
  newFrom = 0,
): { index: number; stop: string } | undefined {
  let best: { index: number; stop: string } | undefined;
  for (const stop of stops) {
    if (stop.length === 0) continue;
    const i = text.indexOf(stop, Math.max(0, newFrom - stop.length + 1));
    if (i >= 0 && (best === undefined || i < best.index)) best = { index: i, stop };
  }
  return best;
}
