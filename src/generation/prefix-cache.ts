/**
 * KV prefix cache across generate() calls (the idea of vLLM's automatic prefix caching and
 * SGLang's RadixAttention): the keys and values of every sequence a call computed (prompt and
 * generated tokens) are kept, keyed by their token ids, and a later request reuses those of its
 * longest cached prefix, so only its new tokens run through the model: the next turn of an agent
 * (its conversation so far), the other samples of a group (the shared prompt), a counterfactual
 * replay (everything before the changed message), the samples of a held-out measurement.
 *
 * Entries are whole sequences; any prefix of an entry is served by slicing it (keys of token i
 * depend only on tokens 0..i, and each is stored at its own RoPE position, no padding). A sequence
 * that extends an entry replaces it, so a conversation is stored once however many turns it has.
 * Least recently used entries are disposed while the entries' bytes exceed the budget.
 *
 * The keys are only valid for the weights they were computed with: every lookup compares the
 * model's weights stamp (each Variable's data id, which any assign changes, LoRA adapters
 * included, plus the count of in-place optimizer steps) and drops everything when it changed: each
 * update, a LoRA change, a resume.
 */
import * as tf from '@tensorflow/tfjs';
import { inPlaceWeightUpdates } from '../backend/native/index.ts';
import type { LayerKv } from '../model/attention.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { commonPrefixLength } from './prefix.ts';

/** One cached sequence: its tokens and every layer's keys/values [KV, n, hd] of positions 0..n-1. */
interface Entry {
  tokens: Int32Array;
  layers: LayerKv[];
  bytes: number;
  /** Logical clock of the last use (LRU). */
  used: number;
}

/** What the cache did since it was made (or since resetStats). */
export interface PrefixCacheStats {
  /** Prompt tokens of the requests that looked a prefix up. */
  neededTokens: number;
  /** Of those, tokens whose keys/values came from the cache. */
  hitTokens: number;
  /** Sequences stored. */
  insertions: number;
  /** Entries disposed to stay within the budget. */
  evictions: number;
  /** Times the weights changed under the cache and it was emptied. */
  invalidations: number;
}

function emptyPrefixCacheStats(): PrefixCacheStats {
  return { neededTokens: 0, hitTokens: 0, insertions: 0, evictions: 0, invalidations: 0 };
}

/** A cached prefix found for a prompt. */
export interface PrefixMatch {
  entry: object;
  length: number;
}

/** The identity of a model's current weights: each Variable's data id and the in-place step count. */
function weightsStamp(model: CausalLM): unknown[] {
  const vars = [...model.baseVariables().values(), ...(model.lora ? model.lora.named().values() : [])];
  return [inPlaceWeightUpdates(), ...vars.map((v) => v.dataId)];
}

/** Prefixes are indexed at multiples of BLOCK tokens (a shorter cached prefix is not reused). */
const BLOCK = 16;
/** Entries compared token by token per lookup, at most. */
const MAX_CANDIDATES = 32;
/** Polynomial hash of a token prefix, modulo a number below 2^33 so that h * 1000003 stays exact in a double. */
const HASH_MOD = 8589934583;
const hashStep = (h: number, t: number): number => (h * 1000003 + t + 1) % HASH_MOD;

function sameStamp(a: readonly unknown[] | undefined, b: readonly unknown[]): boolean {
  return a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}

export class PrefixCache {
  private entries: Entry[] = [];
  /** Prefix hash at each BLOCK boundary -> the entries that hold that prefix. */
  private readonly byBlock = new Map<number, Set<Entry>>();
  /** Whole-sequence hash -> the entries of that sequence (to find the entries a new sequence extends). */
  private readonly byFull = new Map<number, Set<Entry>>();
  private total = 0;
  private clock = 0;
  private stamp: unknown[] | undefined;
  private owner: CausalLM | undefined;
  readonly stats: PrefixCacheStats = emptyPrefixCacheStats();

  /** maxBytes: most bytes of keys and values held (float32). */
  constructor(readonly maxBytes: number) {
    if (!Number.isFinite(maxBytes) || maxBytes < 0)
      throw new Error(`PrefixCache: maxBytes must be a non-negative number (got ${maxBytes})`);
  }

  /** Bytes of keys and values held now. */
  get bytes(): number {
    return this.total;
  }

  /** Entries held now. */
  get size(): number {
    return this.entries.length;
  }

  /**
   * Empties the cache when `model` is not the model, or its weights not the weights, the entries were computed with.
   */
  validate(model: CausalLM): void {
    const stamp = weightsStamp(model);
    if (this.owner === model && sameStamp(this.stamp, stamp)) return;
    if (this.entries.length > 0) this.stats.invalidations += 1;
    this.clear();
    this.owner = model;
    this.stamp = stamp;
  }

  /**
   * Longest cached prefix of `tokens`, at most maxLength long (undefined: none shorter than BLOCK).
   * The block index gives the entries that hold the deepest BLOCK-aligned prefix; the token
   * comparison then measures each (a hash collision only costs a shorter match, never a wrong one).
   */
  match(tokens: ArrayLike<number>, maxLength: number): PrefixMatch | undefined {
    let h = 0;
    let candidates: Set<Entry> | undefined;
    const n = Math.min(tokens.length, maxLength);
    for (let i = 0; i < n; i++) {
      h = hashStep(h, tokens[i] as number);
      if ((i + 1) % BLOCK !== 0) continue;
      const s = this.byBlock.get(h);
      if (!s) break;
      candidates = s;
    }
    if (!candidates) return undefined;
    let best: Entry | undefined;
    let bestLen = 0;
    let seen = 0;
    for (const e of candidates) {
      if (seen++ >= MAX_CANDIDATES) break;
      const len = Math.min(commonPrefixLength(e.tokens, tokens), n);
      if (len > bestLen) {
        best = e;
        bestLen = len;
      }
    }
    if (!best) return undefined;
    best.used = ++this.clock;
    return { entry: best, length: bestLen };
  }

  /**
   * Keys/values of the first `length` tokens of a matched entry, per layer [KV, length, hd] (new tensors the caller
   * owns).
   */
  slice(m: PrefixMatch): LayerKv[] {
    const e = m.entry as Entry;
    if (!this.entries.includes(e)) throw new Error('PrefixCache: the matched entry was evicted');
    return tf.tidy(() =>
      e.layers.map((l) => {
        const [kv, , hd] = l.k.shape;
        return {
          k: tf.slice(l.k, [0, 0, 0], [kv, m.length, hd]) as tf.Tensor3D,
          v: tf.slice(l.v, [0, 0, 0], [kv, m.length, hd]) as tf.Tensor3D,
        }; // [KV, L, hd]
      }),
    );
  }

  /**
   * Stores a sequence: `layers` (per layer [KV, n, hd], n = tokens.length) become the cache's (it
   * disposes them). A sequence shorter than BLOCK, or one an entry already extends, is not stored; entries it extends
   * are replaced. Least recently used entries go until the budget holds (the new one too, when alone it exceeds it).
   */
  insert(tokens: readonly number[], layers: LayerKv[]): void {
    const n = tokens.length;
    const bad = layers.find((l) => l.k.shape[1] !== n || l.v.shape[1] !== n);
    if (bad) {
      const got = bad.k.shape[1];
      disposeLayers(layers);
      throw new Error(`PrefixCache: ${n} tokens but keys of ${got} positions`);
    }
    const covered = n < BLOCK ? undefined : this.match(tokens, n);
    if (n < BLOCK || covered?.length === n) {
      disposeLayers(layers);
      return;
    }
    // Entries that are prefixes of this sequence: their whole-sequence hash is one of its prefix hashes.
    let h = 0;
    const shorter: Entry[] = [];
    for (let i = 0; i < n - 1; i++) {
      h = hashStep(h, tokens[i] as number);
      for (const e of this.byFull.get(h) ?? [])
        if (e.tokens.length === i + 1 && commonPrefixLength(e.tokens, tokens) === i + 1) shorter.push(e);
    }
    for (const e of shorter) this.remove(e);
    const bytes = layers.reduce((a, l) => a + 4 * (l.k.size + l.v.size), 0);
    const entry: Entry = {
      tokens: Int32Array.from(tokens),
      layers: layers.map((l) => ({ k: tf.keep(l.k), v: tf.keep(l.v) })),
      bytes,
      used: ++this.clock,
    };
    this.entries.push(entry);
    this.index(entry, true);
    this.total += bytes;
    this.stats.insertions += 1;
    while (this.total > this.maxBytes && this.entries.length > 0) {
      const lru = this.entries.reduce((a, b) => (b.used < a.used ? b : a));
      this.remove(lru);
      this.stats.evictions += 1;
    }
  }

  /** Disposes every entry (the stats stay). */
  clear(): void {
    for (const e of this.entries) disposeLayers(e.layers);
    this.entries = [];
    this.byBlock.clear();
    this.byFull.clear();
    this.total = 0;
  }

  dispose(): void {
    this.clear();
    this.owner = undefined;
    this.stamp = undefined;
  }

  /** Adds (or removes) an entry's prefix hashes at every BLOCK boundary and its whole-sequence hash. */
  private index(e: Entry, add: boolean): void {
    const put = (map: Map<number, Set<Entry>>, h: number): void => {
      let s = map.get(h);
      if (add) {
        if (!s) map.set(h, (s = new Set()));
        s.add(e);
      } else if (s) {
        s.delete(e);
        if (s.size === 0) map.delete(h);
      }
    };
    let h = 0;
    e.tokens.forEach((t, i) => {
      h = hashStep(h, t);
      if ((i + 1) % BLOCK === 0) put(this.byBlock, h);
    });
    put(this.byFull, h);
  }

  private remove(e: Entry): void {
    const i = this.entries.indexOf(e);
    if (i < 0) return;
    this.entries.splice(i, 1);
    this.index(e, false);
    this.total -= e.bytes;
    disposeLayers(e.layers);
  }
}

function disposeLayers(layers: readonly LayerKv[]): void {
  for (const l of layers) {
    l.k.dispose();
    l.v.dispose();
  }
}

/**
 * The process's prefix cache: one, of the model generating now (a cache for another model
 * replaces it, so a finished policy version's keys never linger). Budget 0 (the default until
 * setPrefixCacheBytes) turns it off.
 */
let budget = 0;
let current: PrefixCache | undefined;

/** Sets the process's prefix-cache budget in bytes (rollout.prefixCacheMiB); 0 turns it off and frees the cache. */
export function setPrefixCacheBytes(bytes: number): void {
  if (!Number.isFinite(bytes) || bytes < 0)
    throw new Error(`prefix cache: budget must be a non-negative number of bytes (got ${bytes})`);
  budget = bytes;
  if (current && current.maxBytes !== bytes) {
    current.dispose();
    current = undefined;
  }
}

/** The process's cache, validated for `model` (emptied when the model or its weights changed); undefined when off. */
export function prefixCacheFor(model: CausalLM): PrefixCache | undefined {
  if (budget <= 0) return undefined;
  current ??= new PrefixCache(budget);
  current.validate(model);
  return current;
}

/** A copy of the process cache's counters (undefined while it is off). */
export function prefixCacheStats(): PrefixCacheStats | undefined {
  return current ? { ...current.stats } : undefined;
}
