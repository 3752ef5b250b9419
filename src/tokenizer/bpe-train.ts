/**
 * Byte-level BPE training (GPT-2: Radford et al. 2019, sec. 2.2; Sennrich et al. 2016). Written here
 * because no JavaScript BPE *trainer* exists in our dependencies (@huggingface/tokenizers only
 * encodes and decodes). Same pre-tokenisation regex and byte-to-unicode alphabet as the ByteLevel
 * pre-tokenizer of `tokenizers` (and of @huggingface/tokenizers, which loads the result).
 * Pure and deterministic: ties between equally frequent pairs go to the smaller (left, right) symbol
 * ids, as in the Rust BpeTrainer.
 */

/** GPT-2's `bytes_to_unicode`: printable characters stand for themselves, the rest shift to 256+. */
export function bytesToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const out = new Array<string>(256);
  const kept = new Set(keep);
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(kept.has(b) ? b : 256 + n++);
  return out;
}

/** The GPT-2 pre-tokenisation pattern, as the ByteLevel pre-tokenizer applies it (use_regex: true). */
const GPT2_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

export interface BpeResult {
  /** Byte-level symbol strings: the 256 byte characters (in byte order), then merged symbols. */
  symbols: string[];
  /** Merges in rank order, as symbol-string pairs. */
  merges: [string, string][];
  /** Tokens the corpus takes after the merges (sum over words of count x length): the compression achieved. */
  corpusTokens: number;
}

/**
 * Counts byte-level pre-tokens ("words") of the texts. `specials` are cut out first, as added tokens
 * are at encode time, so they never take part in merges.
 */
export function countWords(texts: readonly string[], specials: readonly string[]): Map<string, number> {
  const byteChar = bytesToUnicode();
  const enc = new TextEncoder();
  const raw = new Map<string, number>();
  const escaped = specials.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const splitter = escaped.length > 0 ? new RegExp(escaped.join('|'), 'g') : undefined;
  for (const text of texts) {
    for (const piece of splitter ? text.split(splitter) : [text]) {
      for (const m of piece.matchAll(GPT2_PATTERN)) raw.set(m[0], (raw.get(m[0]) ?? 0) + 1);
    }
  }
  // Byte-map each distinct pre-token once (words repeat a lot in natural text).
  const counts = new Map<string, number>();
  for (const [w, n] of raw) {
    let s = '';
    for (const b of enc.encode(w)) s += byteChar[b];
    counts.set(s, (counts.get(s) ?? 0) + n);
  }
  return counts;
}

// Pair key: left * 2^21 + right (symbol ids stay far below 2^21), exact in a double.
const SHIFT = 2 ** 21;
const pairKey = (a: number, b: number): number => a * SHIFT + b;

/** Max-heap of (count, pair) with lazy invalidation: stale entries are checked against `counts` on pop. */
class PairHeap {
  private readonly c: number[] = [];
  private readonly k: number[] = [];

  private better(i: number, j: number): boolean {
    return this.c[i] > this.c[j] || (this.c[i] === this.c[j] && this.k[i] < this.k[j]);
  }
  private swap(i: number, j: number): void {
    [this.c[i], this.c[j]] = [this.c[j], this.c[i]];
    [this.k[i], this.k[j]] = [this.k[j], this.k[i]];
  }
  push(count: number, key: number): void {
    this.c.push(count);
    this.k.push(key);
    let i = this.c.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.better(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }
  pop(): { count: number; key: number } | undefined {
    if (this.c.length === 0) return undefined;
    const top = { count: this.c[0], key: this.k[0] };
    const lastC = this.c.pop() as number;
    const lastK = this.k.pop() as number;
    if (this.c.length > 0) {
      this.c[0] = lastC;
      this.k[0] = lastK;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.c.length && this.better(l, m)) m = l;
        if (r < this.c.length && this.better(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }
}

/**
 * Learns merges until `maxSymbols` distinct symbols exist or no pair is left.
 * Per merge, only the words containing the pair are rewritten and their pair counts adjusted.
 */
export function trainBpe(wordCounts: ReadonlyMap<string, number>, maxSymbols: number): BpeResult {
  const symbols = bytesToUnicode();
  const idOf = new Map(symbols.map((s, i) => [s, i]));
  const words: number[][] = [];
  const freq: number[] = [];
  for (const [w, n] of wordCounts) {
    words.push(Array.from(w, (ch) => idOf.get(ch) as number));
    freq.push(n);
  }
  const counts = new Map<number, number>();
  const where = new Map<number, Set<number>>();
  const add = (key: number, n: number, wi: number): void => {
    const c = (counts.get(key) ?? 0) + n;
    if (c === 0) counts.delete(key);
    else counts.set(key, c);
    if (n > 0) {
      let s = where.get(key);
      if (!s) where.set(key, (s = new Set()));
      s.add(wi);
    }
  };
  words.forEach((w, wi) => {
    for (let i = 0; i + 1 < w.length; i++) add(pairKey(w[i], w[i + 1]), freq[wi], wi);
  });
  const heap = new PairHeap();
  for (const [key, c] of counts) heap.push(c, key);

  const merges: [string, string][] = [];
  while (idOf.size < maxSymbols) {
    const top = heap.pop();
    if (!top) break;
    const current = counts.get(top.key) ?? 0;
    if (current !== top.count) {
      if (current > 0) heap.push(current, top.key); // stale: count fell since this entry was pushed
      continue;
    }
    const a = Math.floor(top.key / SHIFT);
    const b = top.key % SHIFT;
    const merged = symbols[a] + symbols[b];
    let id = idOf.get(merged);
    if (id === undefined) {
      id = symbols.length;
      symbols.push(merged);
      idOf.set(merged, id);
    }
    merges.push([symbols[a], symbols[b]]);
    const touched = new Set<number>();
    for (const wi of where.get(top.key) ?? []) {
      const w = words[wi];
      const out: number[] = [];
      let changed = false;
      for (let i = 0; i < w.length; i++) {
        if (i + 1 < w.length && w[i] === a && w[i + 1] === b) {
          out.push(id);
          i++;
          changed = true;
        } else out.push(w[i]);
      }
      if (!changed) continue; // the set is not pruned when a word loses a pair
      // Net change of this word's pair multiset; pairs away from the merge cancel out.
      const delta = new Map<number, number>();
      for (let i = 0; i + 1 < w.length; i++) {
        const key = pairKey(w[i], w[i + 1]);
        delta.set(key, (delta.get(key) ?? 0) - 1);
      }
      for (let i = 0; i + 1 < out.length; i++) {
        const key = pairKey(out[i], out[i + 1]);
        delta.set(key, (delta.get(key) ?? 0) + 1);
      }
      for (const [key, d] of delta) {
        if (d === 0) continue;
        add(key, d * freq[wi], wi);
        if (d > 0) touched.add(key);
      }
      words[wi] = out;
    }
    where.delete(top.key);
    counts.delete(top.key);
    for (const key of touched) {
      const c = counts.get(key);
      if (c !== undefined && key !== top.key) heap.push(c, key);
    }
  }
  const corpusTokens = words.reduce((sum, w, wi) => sum + w.length * freq[wi], 0);
  return { symbols, merges, corpusTokens };
}
