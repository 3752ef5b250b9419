import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from '../model/causal-lm.ts';
import { positionsFromMask } from '../model/decoder.ts';
import { tidyObject } from '../model/tidy.ts';
import { KvCache } from './kv-cache.ts';
import { findSharedPrefixes, type PrefixGroup } from './prefix.ts';

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
function plainPrefill(model: CausalLM, prompts: readonly number[][], padId: number, headT: tf.Tensor2D, stats: PrefillStats): PrefillResult {
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
    return { logits: out.logits, cache: new KvCache(out.kv, mask, model.config.kvHeads) };
  } finally {
    tf.dispose([ids, pos]);
  }
}

/** Prefix prefill once per group, gather to rows, suffix prefill on top. */
function sharedPrefill(model: CausalLM, prompts: readonly number[][], groups: PrefixGroup[], padId: number, headT: tf.Tensor2D, stats: PrefillStats): PrefillResult {
  const b = prompts.length;
  const g = groups.length;
  const kvH = model.config.kvHeads;
  const groupOf = new Int32Array(b).fill(-1);
  groups.forEach((grp, k) => grp.members.forEach((r) => (groupOf[r] = k)));
  const preLen = (r: number): number => (groupOf[r] as number) >= 0 ? (groups[groupOf[r] as number] as PrefixGroup).length : 0;
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
  stats.prefillTokens += groups.reduce((a, x) => a + x.length, 0) + prompts.reduce((a, p, r) => a + p.length - preLen(r), 0);
  stats.prefillColumns += g * tPre + b * tSuf;

  const out = tidyObject(() => {
    const pIds = tf.tensor2d(preIds, [g, tPre], 'int32'); // [G, Tpre]
    const pMask = tf.tensor2d(preMask, [g, tPre], 'float32'); // [G, Tpre]
    // All-position head skipped: the prefix pass only needs keys/values; lastOnly keeps its logits at [G, V].
    const pre = model.forwardCached(pIds, positionsFromMask(pMask), pMask, undefined, true, headT); // kv [G*KV, Tpre, hd]
    const rows = tf.tensor1d(kvRows, 'int32'); // [B*KV]
    const past = pre.kv.map((l) => ({ k: tf.gather(l.k, rows) as tf.Tensor3D, v: tf.gather(l.v, rows) as tf.Tensor3D })); // [B*KV, Tpre, hd]
    const mask = tf.tensor2d(fullMask, [b, w], 'float32'); // [B, Tpre+Tsuf]
    const pos = tf.slice(positionsFromMask(mask), [0, tPre], [b, tSuf]) as tf.Tensor2D; // [B, Tsuf] positions within each own prompt
    const suf = model.forwardCached(tf.tensor2d(sufIds, [b, tSuf], 'int32'), pos, mask, past, true, headT); // logits [B, V], kv [B*KV, Tpre+Tsuf, hd]
    return { logits: suf.logits, kv: suf.kv, mask };
  });
  return { logits: out.logits, cache: new KvCache(out.kv, out.mask, kvH) };
}

/**
 * Prefill of prompts (one per batch row, each non-empty). minTokens: shortest shared prefix worth
 * reusing (0 = never share). Adds its counts to stats.
 */
export function prefillPrompts(model: CausalLM, prompts: readonly number[][], opts: { padId: number; headT: tf.Tensor2D; minTokens: number; stats: PrefillStats }): PrefillResult {
  const groups = findSharedPrefixes(prompts, opts.minTokens);
  if (groups.length === 0) return plainPrefill(model, prompts, opts.padId, opts.headT, opts.stats);
  return sharedPrefill(model, prompts, groups, opts.padId, opts.headT, opts.stats);
}
