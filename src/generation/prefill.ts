/**
 * The prefill of generate(): prompts in, first-step logits and a KV cache out.
 * Without shared prefixes the prompts are left-padded and run once. With groups of
 * prompts sharing >= minTokens leading tokens, each distinct prefix is prefilled ONCE (one batch of
 * distinct prefixes), its keys/values are gathered to the rows that share it, and only each row's
 * remaining suffix runs on top. Cache layout per row: [left pad][prefix | Tpre][left pad][suffix | Tsuf];
 * rows without a group have an all-pad prefix part (mask 0: never attended) and their whole prompt
 * as suffix. RoPE positions come from the full mask, so every real token keeps its position in its
 * own prompt, and masked keys get weight exp(-1e9) = 0 exactly, so the result equals the plain
 * prefill up to float rounding of differently shaped matmuls.
 */
import * as tf from '@tensorflow/tfjs';
import type { LayerKv } from '../model/attention.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { positionsFromMask, type InferenceHead } from '../model/decoder.ts';
import { tidyObject } from '../model/tidy.ts';
import { KvCache, type ColumnRuns } from './kv-cache.ts';
import { branchPrefixes, findSharedPrefixes, type PrefixGroup } from './prefix.ts';
import type { PrefixCache, PrefixMatch } from './prefix-cache.ts';

/** Prefill work of one generate() call (counts real prompt tokens, and computed columns incl. padding). */
export interface PrefillStats {
  /** Real tokens run through the model: each distinct shared prefix once, plus every row's rest. */
  prefillTokens: number;
  /** Batch x columns computed (padding included): the compute the prefill actually paid. */
  prefillColumns: number;
  /** Distinct shared prefixes prefilled once each. */
  sharedPrefixes: number;
  /** Prompt tokens not recomputed thanks to sharing (sum over groups of (members - 1) x length). */
  reusedTokens: number;
}

export function emptyPrefillStats(): PrefillStats {
  return { prefillTokens: 0, prefillColumns: 0, sharedPrefixes: 0, reusedTokens: 0 };
}

export interface PrefillResult {
  logits: tf.Tensor2D; // [B, V] logits after each prompt's last token
  cache: KvCache;
}

/** Plain prefill: left-padded prompts run once (every prompt ends at the last column). */
function plainPrefill(
  model: CausalLM,
  prompts: readonly number[][],
  padId: number,
  headT: InferenceHead,
  stats: PrefillStats,
): PrefillResult {
  const b = prompts.length;
  const tp = Math.max(...prompts.map((p) => p.length));
  const idsHost = new Int32Array(b * tp).fill(padId);
  const maskHost = new Float32Array(b * tp);
  prompts.forEach((p, r) => {
    idsHost.set(p, r * tp + tp - p.length);
    maskHost.fill(1, r * tp + tp - p.length, (r + 1) * tp);
  });
  stats.prefillTokens += prompts.reduce((a, p) => a + p.length, 0);
  stats.prefillColumns += b * tp;
  const ids = tf.tensor2d(idsHost, [b, tp], 'int32'); // [B, Tp]
  const mask = tf.tensor2d(maskHost, [b, tp], 'float32'); // [B, Tp]
  const pos = positionsFromMask(mask); // [B, Tp]
  try {
    const out = model.forwardCached(ids, pos, mask, undefined, true, headT); // logits [B, V]
    return {
      logits: out.logits,
      cache: new KvCache(
        out.kv,
        mask,
        model.config.kvHeads,
        prompts.map((p) => [[tp - p.length, tp]]),
      ),
    };
  } finally {
    tf.dispose([ids, pos]);
  }
}

/** Prefix prefill once per group, gather to rows, suffix prefill on top. */
function sharedPrefill(
  model: CausalLM,
  prompts: readonly number[][],
  groups: PrefixGroup[],
  padId: number,
  headT: InferenceHead,
  stats: PrefillStats,
): PrefillResult {
  const b = prompts.length;
  const g = groups.length;
  const kvH = model.config.kvHeads;
  const groupOf = new Int32Array(b).fill(-1);
  groups.forEach((grp, k) => grp.members.forEach((r) => (groupOf[r] = k)));
  const preLen = (r: number): number =>
    (groupOf[r] as number) >= 0 ? (groups[groupOf[r] as number] as PrefixGroup).length : 0;
  const tPre = Math.max(...groups.map((x) => x.length));
  const tSuf = Math.max(...prompts.map((p, r) => p.length - preLen(r)));

  // Distinct prefixes, left-padded to tPre: [G, Tpre].
  const preIds = new Int32Array(g * tPre).fill(padId);
  const preMask = new Float32Array(g * tPre);
  groups.forEach((grp, k) => {
    const p = (prompts[grp.members[0] as number] as number[]).slice(0, grp.length);
    preIds.set(p, k * tPre + tPre - p.length);
    preMask.fill(1, k * tPre + tPre - p.length, (k + 1) * tPre);
  });
  // Full mask [B, Tpre + Tsuf] and the suffix ids [B, Tsuf], each part left-padded.
  const w = tPre + tSuf;
  const sufIds = new Int32Array(b * tSuf).fill(padId);
  const fullMask = new Float32Array(b * w);
  // Rows without a group read group 0's keys/values in their prefix part: masked, so never attended.
  const kvRows = new Int32Array(b * kvH);
  prompts.forEach((p, r) => {
    const k = groupOf[r] as number;
    const pl = preLen(r);
    if (k >= 0) fullMask.fill(1, r * w + tPre - pl, r * w + tPre);
    const s = p.slice(pl);
    sufIds.set(s, r * tSuf + tSuf - s.length);
    fullMask.fill(1, r * w + w - s.length, (r + 1) * w);
    for (let j = 0; j < kvH; j++) kvRows[r * kvH + j] = Math.max(k, 0) * kvH + j;
  });

  for (const grp of groups) {
    stats.sharedPrefixes += 1;
    stats.reusedTokens += (grp.members.length - 1) * grp.length;
  }
  stats.prefillTokens +=
    groups.reduce((a, x) => a + x.length, 0) + prompts.reduce((a, p, r) => a + p.length - preLen(r), 0);
  stats.prefillColumns += g * tPre + b * tSuf;

  const out = tidyObject(() => {
    const pIds = tf.tensor2d(preIds, [g, tPre], 'int32'); // [G, Tpre]
    const pMask = tf.tensor2d(preMask, [g, tPre], 'float32'); // [G, Tpre]
    // All-position head skipped: the prefix pass only needs keys/values; lastOnly keeps its logits at [G, V].
    // kv [G*KV, Tpre, hd]
    const pre = model.forwardCached(pIds, positionsFromMask(pMask), pMask, undefined, true, headT);
    const rows = tf.tensor1d(kvRows, 'int32'); // [B*KV]
    const past = pre.kv.map((l) => ({
      k: tf.gather(l.k, rows) as tf.Tensor3D,
      v: tf.gather(l.v, rows) as tf.Tensor3D,
    })); // [B*KV, Tpre, hd]
    const mask = tf.tensor2d(fullMask, [b, w], 'float32'); // [B, Tpre+Tsuf]
    // [B, Tsuf] positions within each own prompt
    const pos = tf.slice(positionsFromMask(mask), [0, tPre], [b, tSuf]) as tf.Tensor2D;
    // logits [B, V], kv [B*KV, Tpre+Tsuf, hd]
    const suf = model.forwardCached(tf.tensor2d(sufIds, [b, tSuf], 'int32'), pos, mask, past, true, headT);
    return { logits: suf.logits, kv: suf.kv, mask };
  });
  const runs = prompts.map((p, r): ColumnRuns => [
    [tPre - preLen(r), tPre],
    [w - (p.length - preLen(r)), w],
  ]);
  return { logits: out.logits, cache: new KvCache(out.kv, out.mask, kvH, runs) };
}

/**
 * Prefill of prompts (one per batch row, each non-empty). minTokens: shortest shared prefix worth
 * reusing (0 = never share). Adds its counts to stats.
 */
export function prefillPrompts(
  model: CausalLM,
  prompts: readonly number[][],
  opts: { padId: number; headT: InferenceHead; minTokens: number; stats: PrefillStats },
): PrefillResult {
  const groups = findSharedPrefixes(prompts, opts.minTokens);
  if (groups.length === 0) return plainPrefill(model, prompts, opts.padId, opts.headT, opts.stats);
  return sharedPrefill(model, prompts, groups, opts.padId, opts.headT, opts.stats);
}

/**
 * Prefill through the prefix cache (prefix-cache.ts): each prompt's longest cached prefix (all but
 * at least its last token) is sliced from the cache and only the rest runs, on top of it. The
 * prefixes the batch shares (>= minTokens; prefix.ts branchPrefixes) that the cache lacks are
 * prefilled first, once each, and stored, so the rows that share them hit. Cache layout per row: [left pad][cached |
 * L][left pad][rest], positions from the full mask (each token keeps its position in its own
 * prompt); masked columns get weight exp(-1e9) = 0, so the result equals the plain prefill up to
 * float rounding of differently shaped matmuls. The returned KvCache knows each row's real columns
 * (KvCache.rowKv), so generate() can store the finished sequences.
 */
export function prefillWithCache(
  model: CausalLM,
  prompts: readonly number[][],
  opts: {
    padId: number;
    headT: InferenceHead;
    minTokens: number;
    stats: PrefillStats;
    cache: PrefixCache;
    countLookups?: boolean;
  },
): PrefillResult {
  const { cache } = opts;
  // Every branch of the batch's token trie that the cache lacks is prefilled first, once (and the
  // branches among those before them, by the same call), and stored.
  const prefixes = branchPrefixes(prompts, opts.minTokens).filter(
    (p) => (cache.match(p, p.length)?.length ?? 0) < p.length,
  );
  if (prefixes.length > 0) {
    const warm = prefillWithCache(model, prefixes, { ...opts, countLookups: false });
    warm.logits.dispose();
    try {
      prefixes.forEach((p, r) => cache.insert(p, warm.cache.rowKv(r)));
    } finally {
      warm.cache.dispose();
    }
    opts.stats.sharedPrefixes += prefixes.length;
  }
  const matches: (PrefixMatch | undefined)[] = prompts.map((p) => cache.match(p, p.length - 1));
  const lens = matches.map((m) => m?.length ?? 0);
  if (opts.countLookups !== false) {
    cache.stats.neededTokens += prompts.reduce((a, p) => a + p.length, 0);
    cache.stats.hitTokens += lens.reduce((a, x) => a + x, 0);
  }
  const rest = prompts.map((p, r) => p.length - (lens[r] as number));
  const buckets = suffixBuckets(rest);
  if (buckets.length === 1) {
    const one = cachedPart(model, prompts, matches, lens, opts);
    return { logits: one.logits, cache: new KvCache(one.kv, one.mask, model.config.kvHeads, one.runs) };
  }
  const parts = buckets.map((rows) =>
    cachedPart(
      model,
      rows.map((r) => prompts[r] as number[]),
      rows.map((r) => matches[r]),
      rows.map((r) => lens[r] as number),
      opts,
    ),
  );
  return mergeParts(parts, buckets, model.config.kvHeads);
}

/**
 * Rows in batches of similar suffix length (the suffix pass computes rows x longest suffix
 * columns: one row that misses the cache would make every row of the batch pay its length). Rows
 * sorted by suffix, longest first; a row starts a new batch when its suffix is under half the
 * batch's longest.
 */
export function suffixBuckets(rest: readonly number[]): number[][] {
  const order = rest.map((_, i) => i).sort((a, b) => (rest[b] as number) - (rest[a] as number) || a - b);
  const out: number[][] = [];
  let longest = 0;
  for (const r of order) {
    const n = rest[r] as number;
    if (out.length === 0 || 2 * n < longest) {
      out.push([]);
      longest = n;
    }
    (out[out.length - 1] as number[]).push(r);
  }
  return out;
}

interface Part {
  logits: tf.Tensor2D; // [b, V]
  kv: LayerKv[]; // [b*KV, W, hd]
  mask: tf.Tensor2D; // [b, W]
  runs: ColumnRuns[];
}

/**
 * One cache of the batches of `buckets` (row indices each): columns left-padded to the widest, rows back in request
 * order.
 */
function mergeParts(parts: Part[], buckets: number[][], kvH: number): PrefillResult {
  const w = Math.max(...parts.map((p) => p.mask.shape[1]));
  const order = buckets.flat(); // concatenated position -> request row
  const where = new Int32Array(order.length); // request row -> concatenated position
  order.forEach((r, k) => (where[r] = k));
  const kvWhere = new Int32Array(order.length * kvH);
  where.forEach((k, r) => {
    for (let j = 0; j < kvH; j++) kvWhere[r * kvH + j] = k * kvH + j;
  });
  const runs: ColumnRuns[] = new Array<ColumnRuns>(order.length);
  parts.forEach((p, i) => {
    const shift = w - p.mask.shape[1];
    (buckets[i] as number[]).forEach(
      (r, k) => (runs[r] = (p.runs[k] as ColumnRuns).map(([a, b]) => [a + shift, b + shift] as const)),
    );
  });
  const out = tidyObject(() => {
    const padCols = <T extends tf.Tensor>(x: T, axis: number): T => {
      const extra = w - (x.shape[axis] as number);
      if (extra === 0) return x;
      const pads = x.shape.map((_, a) => (a === axis ? [extra, 0] : [0, 0])) as [number, number][];
      return tf.pad(x, pads) as T;
    };
    const rows = tf.tensor1d(where, 'int32'); // [B]
    const kvRows = tf.tensor1d(kvWhere, 'int32'); // [B*KV]
    const layers = (parts[0] as Part).kv.map((_, i) => ({
      k: tf.gather(
        tf.concat(
          parts.map((p) => padCols((p.kv[i] as LayerKv).k, 1)),
          0,
        ),
        kvRows,
      ) as tf.Tensor3D, // [B*KV, W, hd]
      v: tf.gather(
        tf.concat(
          parts.map((p) => padCols((p.kv[i] as LayerKv).v, 1)),
          0,
        ),
        kvRows,
      ) as tf.Tensor3D, // [B*KV, W, hd]
    }));
    const mask = tf.gather(
      tf.concat(
        parts.map((p) => padCols(p.mask, 1)),
        0,
      ),
      rows,
    ) as tf.Tensor2D; // [B, W]
    const logits = tf.gather(
      tf.concat(
        parts.map((p) => p.logits),
        0,
      ),
      rows,
    ) as tf.Tensor2D; // [B, V]
    return { layers, mask, logits };
  });
  for (const p of parts) tf.dispose([p.logits, p.mask, ...p.kv.flatMap((l) => [l.k, l.v])]);
  return { logits: out.logits, cache: new KvCache(out.layers, out.mask, kvH, runs) };
}

/** The cached prefill of one batch: the rows' cached prefixes sliced in, their rests run on top. */
function cachedPart(
  model: CausalLM,
  prompts: readonly number[][],
  matches: readonly (PrefixMatch | undefined)[],
  lens: readonly number[],
  opts: { padId: number; headT: InferenceHead; stats: PrefillStats; cache: PrefixCache },
): Part {
  const { cache } = opts;
  const b = prompts.length;
  const kvH = model.config.kvHeads;
  const lMax = Math.max(...lens);
  const tSuf = Math.max(...prompts.map((p, r) => p.length - (lens[r] as number)));
  const w = lMax + tSuf;
  const sufIds = new Int32Array(b * tSuf).fill(opts.padId);
  const fullMask = new Float32Array(b * w);
  const runs: ColumnRuns[] = [];
  // Distinct (entry, length) pieces of the cache, each sliced once; rows without a hit read piece 0 under a zero mask.
  const pieces: PrefixMatch[] = [];
  const kvRows = new Int32Array(b * kvH);
  prompts.forEach((p, r) => {
    const l = lens[r] as number;
    const m = matches[r];
    let k = 0;
    if (m && l > 0) {
      k = pieces.findIndex((x) => x.entry === m.entry && x.length === l);
      if (k < 0) k = pieces.push(m) - 1;
      fullMask.fill(1, r * w + lMax - l, r * w + lMax);
    }
    const rest = p.slice(l);
    sufIds.set(rest, r * tSuf + tSuf - rest.length);
    fullMask.fill(1, r * w + w - rest.length, (r + 1) * w);
    runs.push([
      [lMax - l, lMax],
      [w - rest.length, w],
    ]);
    for (let j = 0; j < kvH; j++) kvRows[r * kvH + j] = k * kvH + j;
  });
  opts.stats.prefillTokens += prompts.reduce((a, p, r) => a + p.length - (lens[r] as number), 0);
  opts.stats.prefillColumns += b * tSuf;

  const out = tidyObject(() => {
    let past: LayerKv[] | undefined;
    if (lMax > 0) {
      const sliced = pieces.map((m) => cache.slice(m)); // per piece, per layer [KV, L, hd]
      const rows = tf.tensor1d(kvRows, 'int32'); // [B*KV]
      past = [];
      for (let i = 0; i < model.config.layers; i++) {
        const stack = (which: 'k' | 'v'): tf.Tensor3D => {
          const padded = sliced.map((layers, k) => {
            const x = (layers[i] as LayerKv)[which]; // [KV, L, hd]
            const l = (pieces[k] as PrefixMatch).length;
            return l === lMax
              ? x
              : (tf.pad(x, [
                  [0, 0],
                  [lMax - l, 0],
                  [0, 0],
                ]) as tf.Tensor3D); // [KV, Lmax, hd]
          });
          // [P*KV, Lmax, hd]
          const all = padded.length === 1 ? (padded[0] as tf.Tensor3D) : (tf.concat(padded, 0) as tf.Tensor3D);
          return tf.gather(all, rows) as tf.Tensor3D; // [B*KV, Lmax, hd]
        };
        past.push({ k: stack('k'), v: stack('v') });
      }
    }
    const mask = tf.tensor2d(fullMask, [b, w], 'float32'); // [B, Lmax+Tsuf]
    // [B, Tsuf] positions within each own prompt
    const pos = tf.slice(positionsFromMask(mask), [0, lMax], [b, tSuf]) as tf.Tensor2D;
    // logits [B, V], kv [B*KV, Lmax+Tsuf, hd]
    const res = model.forwardCached(tf.tensor2d(sufIds, [b, tSuf], 'int32'), pos, mask, past, true, opts.headT);
    return { logits: res.logits, kv: res.kv, mask };
  });
  return { ...out, runs };
}
