import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { tidyObject } from '../model/tidy.ts';
import type { InferenceHead } from '../model/decoder.ts';
import { KvCache } from './kv-cache.ts';
import { emptyPrefillStats, prefillPrompts, prefillWithCache, type PrefillStats } from './prefill.ts';
import type { PrefixCache } from './prefix-cache.ts';
import { checkSampling, sampleNext, type SamplingParams } from './sampling.ts';
import { IncrementalDecoder, findStop, type Decodes } from '../tokenizer/incremental.ts';

/**
 * Batched generation with a KV cache: the prompts are
 * left-padded and prefilled once (a prefix shared by several prompts only once for all of them,
 * prefill.ts), then one token per step is fed; nothing of the prefix is recomputed. With a prefix
 * cache (prefix-cache.ts) a prompt's longest prefix computed by an earlier call is reused too. Finished sequences leave
 * the batch (their cache rows are dropped), and the only device-to-host read per step is the chosen ids with their
 * logprobs.
 */
export interface GenerateRequest {
  promptIds: number[];
  maxNewTokens: number;
  /** Stop after any of these strings appears in the generated text (it stays in the text). */
  stop?: string[];
  /** Emit exactly these tokens (replay); maxNewTokens and stops do not cut it short. */
  forcedTokens?: number[];
  /**
   * This row's own sampling stream (an Rng seeded with it) instead of a fork of `opts.rng`: the
   * counterfactual replays' common random numbers (docs/architecture.md, "Credit").
   */
  seed?: number;
}

export interface GenerateResult {
  tokenIds: number[];
  /** log p(token | prefix) under the model (untempered), one per token. */
  logprobs: number[];
  /** Decoded text of tokenIds (a trailing EOS is not rendered). */
  text: string;
  finishReason: 'stop' | 'eos' | 'length';
}

export interface GenerateOptions extends SamplingParams {
  rng: Rng;
  eosIds: readonly number[];
  /** The tokenizer (only decode is used). */
  decoder: Decodes;
  /** Id used for left padding (never attended to); default 0. */
  padId?: number;
  /**
   * Requests whose prompts share at least this many leading tokens prefill that prefix once
   * (see prefill.ts); 0 turns sharing off. Default DEFAULT_PREFIX_MIN_TOKENS.
   */
  prefixMinTokens?: number;
  /** When given, the prefill adds its token counts here (the proof that a prefix ran once). */
  stats?: PrefillStats;
  /**
   * Most prefill attention-score floats per batch (default PREFILL_SCORE_BUDGET); larger calls run in several batches.
   */
  prefillScoreBudget?: number;
  /**
   * KV prefix cache across calls (prefix-cache.ts): prompts reuse the keys/values of their longest
   * cached prefix, and every finished sequence (prompt and generated tokens) is stored. It must
   * belong to `model`'s current weights (generate validates it: a stale cache is emptied).
   */
  prefixCache?: PrefixCache;
  /** Bytes of keys and values one decode batch may hold (default 64 MiB); prefill chunks decode together up to it. */
  decodeKvBytes?: number;
  /**
   * Called after every decode step of a batch with the steps done and the rows still generating (progress of long
   * generations).
   */
  onStep?: (step: number, live: number) => void;
}

/** Token counts of every generate() call of the process (the bench's prefill tokens computed vs needed). */
export interface GenerationTotals {
  /** Prompt tokens of the requests that were generated for. */
  promptTokens: number;
  /** Prompt tokens run through the model (after shared and cached prefixes). */
  prefillTokens: number;
  /** Tokens fed by decode steps (every generated token but each row's last). */
  decodeTokens: number;
  /** Wall-clock seconds inside generate() (calls that overlap count twice). */
  seconds: number;
}

const totals: GenerationTotals = { promptTokens: 0, prefillTokens: 0, decodeTokens: 0, seconds: 0 };

/** A copy of the process's generation totals (subtract two copies to measure a stretch). */
export function generationTotals(): GenerationTotals {
  return { ...totals };
}

/**
 * 2^24 floats (64 MiB) of prefill attention scores per batch: several such tensors live at once, and the wasm heap
 * fragments.
 */
const PREFILL_SCORE_BUDGET = 2 ** 24;

/**
 * 64 MiB of keys and values per decode batch: prefill chunks decode together up to it (a chunk alone may exceed it),
 * so small chunks do not decode one after another. Not more: on the wasm heap a 568-row batch of Shapley replays
 * (340 MB of keys and values) decoded 1.6x slower than its eight chunks one after another (the credit bench).
 */
const DECODE_KV_BUDGET = 2 ** 26;

/**
 * A decode batch drops its finished rows (a copy of the others' keys and values) once fewer than this share of its
 * rows still generate; until then they ride along. Dropping at every finish copied the cache of a 568-row batch of
 * replays at nearly every step.
 */
const COMPACT_BELOW = 0.75;

/** Below this a shared prefix is not worth the extra prefill pass and gather. */
const DEFAULT_PREFIX_MIN_TOKENS = 16;

interface RowState {
  req: GenerateRequest;
  tokens: number[];
  logprobs: number[];
  text: string;
  /** Seeded with the last prompt token: SentencePiece decoders drop the leading space of the first
   * token decoded, so decoding the continuation alone would turn " upon" into "upon". */
  detok: IncrementalDecoder;
  /** Text of the seed token, cut from the front of detok's text. */
  seedLen: number;
  /** This row's own stream (forked per request in order), so a row samples the same whatever else shares the batch. */
  rng: Rng;
  finish?: GenerateResult['finishReason'];
  /** Real tokens so far (prompt + generated): the RoPE position of the next token. */
  length: number;
}

function validate(reqs: GenerateRequest[], vocab: number): void {
  reqs.forEach((r, i) => {
    if (r.promptIds.length === 0) throw new Error(`generate: request ${i} has an empty prompt`);
    if (!Number.isInteger(r.maxNewTokens) || r.maxNewTokens < 0)
      throw new Error(`generate: request ${i} maxNewTokens must be a non-negative integer (got ${r.maxNewTokens})`);
    const bad = [...r.promptIds, ...(r.forcedTokens ?? [])].find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (bad !== undefined)
      throw new Error(`generate: request ${i} has token id ${bad} outside the vocabulary [0, ${vocab})`);
  });
}

/** Decides whether row s is done after its newest token. */
function finishOf(
  s: RowState,
  eos: ReadonlySet<number>,
  checkedLen: number,
): GenerateResult['finishReason'] | undefined {
  const last = s.tokens[s.tokens.length - 1] as number;
  const forced = s.req.forcedTokens;
  const stopHit = s.req.stop && s.req.stop.length > 0 ? findStop(s.text, s.req.stop, checkedLen) !== undefined : false;
  if (forced) {
    if (s.tokens.length < forced.length) return undefined;
    return eos.has(last) ? 'eos' : stopHit ? 'stop' : 'length';
  }
  if (eos.has(last)) return 'eos';
  if (stopHit) return 'stop';
  return s.tokens.length >= s.req.maxNewTokens ? 'length' : undefined;
}

function newRow(req: GenerateRequest, dec: Decodes, rng: Rng): RowState {
  const detok = new IncrementalDecoder(dec, { skipSpecialTokens: true });
  detok.push(req.promptIds[req.promptIds.length - 1] as number);
  detok.flush();
  return {
    req,
    tokens: [],
    logprobs: [],
    text: '',
    detok,
    seedLen: detok.text.length,
    rng,
    length: req.promptIds.length,
  };
}

/** Adds a generated token's text (EOS renders as nothing). */
function pushText(s: RowState, token: number, eos: ReadonlySet<number>): void {
  if (!eos.has(token)) s.detok.push(token);
  s.text = s.detok.text.slice(s.seedLen);
}

/** Generates for every request in one batch; results in request order. */
export async function generate(
  model: CausalLM,
  requests: GenerateRequest[],
  opts: GenerateOptions,
): Promise<GenerateResult[]> {
  checkSampling(opts);
  validate(requests, model.config.vocabSize);
  opts.prefixCache?.validate(model);
  const eos = new Set(opts.eosIds);
  const states: RowState[] = requests.map((req) =>
    newRow(req, opts.decoder, req.seed === undefined ? opts.rng.fork() : new Rng(req.seed)),
  );
  // Rows with nothing to generate never enter the batch.
  for (const s of states) if ((s.req.forcedTokens?.length ?? s.req.maxNewTokens) === 0) s.finish = 'length';
  const live = states.map((_, i) => i).filter((i) => states[i]?.finish === undefined);
  const heads = model.config.heads;
  const chunks = prefillChunks(
    live.map((i) => (states[i] as RowState).req.promptIds.length),
    heads,
    opts.prefillScoreBudget ?? PREFILL_SCORE_BUDGET,
  );
  const c = model.config;
  const rowBytes = (k: number): number => {
    const r = (states[live[k] as number] as RowState).req;
    const width = r.promptIds.length + Math.max(r.maxNewTokens, r.forcedTokens?.length ?? 0);
    return 2 * c.layers * c.kvHeads * c.headDim * 4 * width; // keys and values, float32
  };
  const batches = decodeBatches(chunks, rowBytes, opts.decodeKvBytes ?? DECODE_KV_BUDGET);
  const t0 = performance.now();
  const headT = model.inferenceHead(); // once per call, not per batch or step
  try {
    for (const parts of batches)
      await decodeRows(
        model,
        states,
        parts.map((chunk) => chunk.map((k) => live[k] as number)),
        eos,
        headT,
        opts,
      );
  } finally {
    headT.dispose();
    totals.seconds += (performance.now() - t0) / 1000;
  }
  return states.map((s) => ({
    tokenIds: s.tokens,
    logprobs: s.logprobs,
    text: s.text,
    finishReason: s.finish ?? 'length',
  }));
}

/**
 * Consecutive prefill chunks grouped into decode batches whose keys and values (rowBytes per row, at its longest) stay
 * within `budget` bytes; a chunk alone may exceed it. Rows sample from their own streams, so the grouping changes
 * only how many rows share a decode step (and so float rounding of the step's products), never which tokens a row
 * may draw.
 */
export function decodeBatches(
  chunks: readonly number[][],
  rowBytes: (row: number) => number,
  budget: number,
): number[][][] {
  const out: number[][][] = [];
  let cur: number[][] = [];
  let bytes = 0;
  for (const chunk of chunks) {
    const b = chunk.reduce((a, k) => a + rowBytes(k), 0);
    if (cur.length > 0 && bytes + b > budget) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(chunk);
    bytes += b;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * Consecutive runs of rows whose prefill attention scores ([rows, heads, T, T] floats, T the
 * longest prompt of the run) stay within `budget` floats; a row alone may exceed it. Rows sample
 * from their own forked streams, so running them in several batches draws the same tokens as one
 * batch (up to float rounding of differently shaped matmuls): a held-out set of hundreds of long
 * prompts no longer exhausts the 4 GiB wasm heap in one prefill.
 */
export function prefillChunks(promptLengths: readonly number[], heads: number, budget: number): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let longest = 0;
  promptLengths.forEach((len, k) => {
    const t = Math.max(longest, len);
    if (cur.length > 0 && (cur.length + 1) * heads * t * t > budget) {
      out.push(cur);
      cur = [];
      longest = 0;
    }
    cur.push(k);
    longest = Math.max(longest, len);
  });
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * Stores the keys/values of batch rows `rows` (just finished; batch[r] is row r's state): their prompt and every
 * generated token fed so far.
 */
function storeRows(pc: PrefixCache, cache: KvCache, states: RowState[], batch: number[], rows: number[]): void {
  for (const r of rows) {
    const s = states[batch[r] as number] as RowState;
    pc.insert([...s.req.promptIds, ...s.tokens.slice(0, -1)], cache.rowKv(r)); // the newest token was never fed
  }
}

/** Prefill of the rows `rows` of `states` in one batch. */
function prefillRows(
  model: CausalLM,
  states: RowState[],
  rows: number[],
  headT: InferenceHead,
  opts: GenerateOptions,
): { logits: tf.Tensor2D; cache: KvCache } {
  const prompts = rows.map((i) => (states[i] as RowState).req.promptIds);
  const minTokens = opts.prefixMinTokens ?? DEFAULT_PREFIX_MIN_TOKENS;
  const stats = emptyPrefillStats();
  const pOpts = { padId: opts.padId ?? 0, headT, minTokens, stats };
  const pre = opts.prefixCache
    ? prefillWithCache(model, prompts, { ...pOpts, cache: opts.prefixCache })
    : prefillPrompts(model, prompts, pOpts);
  totals.promptTokens += prompts.reduce((a, p) => a + p.length, 0);
  totals.prefillTokens += stats.prefillTokens;
  if (opts.stats) for (const k of Object.keys(stats) as (keyof PrefillStats)[]) opts.stats[k] += stats[k];
  return pre;
}

/**
 * Prefill of each chunk of `parts` (rows of `states`), then one decode of all their rows together, filling their
 * tokens and text.
 */
async function decodeRows(
  model: CausalLM,
  states: RowState[],
  parts: number[][],
  eos: ReadonlySet<number>,
  headT: InferenceHead,
  opts: GenerateOptions,
): Promise<void> {
  let live = parts.flat();
  let steps = 0;
  let cache: KvCache | undefined;
  let logits: tf.Tensor2D | undefined;
  const pres: { logits: tf.Tensor2D; cache: KvCache }[] = [];
  try {
    {
      for (const rows of parts) pres.push(prefillRows(model, states, rows, headT, opts));
      const [only] = pres;
      if (pres.length === 1 && only) {
        logits = only.logits; // [B, V]
        cache = only.cache;
      } else {
        logits = tf.concat(pres.map((p) => p.logits)) as tf.Tensor2D; // [B, V]
        cache = KvCache.stack(pres.map((p) => p.cache));
        for (const p of pres) {
          p.logits.dispose();
          p.cache.dispose();
        }
      }
      pres.length = 0;
      // room for every token the rows may feed (the last sampled one never is)
      const feeds = live.map((i) => {
        const r = (states[i] as RowState).req;
        return Math.max(r.maxNewTokens, r.forcedTokens?.length ?? 0) - 1;
      });
      cache.reserve(Math.max(0, ...feeds));
    }
    // batch row r holds states[batch[r]]; a finished row stays (fed, its outputs ignored) until few enough rows
    // live that dropping them pays for copying the cache of the rest
    let done = live.map(() => false);
    for (;;) {
      const batch = live;
      const uniforms = batch.map((i, r) => (done[r] ? 0 : Math.min((states[i] as RowState).rng.float(), 1 - 1e-7)));
      const forced = batch.map((i, r) => {
        const s = states[i] as RowState;
        return !done[r] && s.req.forcedTokens ? (s.req.forcedTokens[s.tokens.length] as number) : -1;
      });
      const current: tf.Tensor2D = logits as tf.Tensor2D;
      const anyForced = forced.some((t) => t >= 0);
      const picked = tf.tidy(() => {
        const { ids, logprobs } = sampleNext(
          current,
          tf.tensor1d(uniforms, 'float32'),
          anyForced ? tf.tensor1d(forced, 'int32') : undefined,
          opts,
        ); // forced [B] only when a row replays
        // [2, B] one read per step (ids < 2^24 are exact in float32)
        return tf.stack([tf.cast(ids, 'float32'), logprobs]);
      });
      current.dispose();
      logits = undefined;
      const host = (await picked.data()) as Float32Array;
      picked.dispose();
      const b = batch.length;
      const finished: number[] = [];
      batch.forEach((i, r) => {
        if (done[r]) return;
        const s = states[i] as RowState;
        s.tokens.push(host[r] as number);
        s.logprobs.push(host[b + r] as number);
        s.length += 1;
        const checked = s.text.length;
        pushText(s, host[r] as number, eos);
        s.finish = finishOf(s, eos, checked);
        if (s.finish !== undefined) {
          s.detok.flush(); // an incomplete multi-byte character at the end renders as U+FFFD, as a full decode would
          s.text = s.detok.text.slice(s.seedLen);
          finished.push(r);
          done[r] = true;
        }
      });
      if (opts.prefixCache && finished.length > 0)
        storeRows(opts.prefixCache, cache as KvCache, states, batch, finished);
      const keep = batch.map((_, r) => r).filter((r) => !done[r]);
      opts.onStep?.(++steps, keep.length);
      if (keep.length === 0) break;
      if (keep.length < b * COMPACT_BELOW) {
        cache.keepRows(keep);
        live = keep.map((r) => batch[r] as number);
        done = live.map(() => false);
      }
      // a finished row feeds its last token again at the same position: its outputs are never read
      const next = live.map((i) => {
        const s = states[i] as RowState;
        return s.tokens[s.tokens.length - 1] as number;
      });
      const positions = live.map((i) => (states[i] as RowState).length - 1);
      cache.reserve(1); // a no-op unless a row outgrows its estimate
      const c: KvCache = cache;
      const rows = live.length;
      totals.decodeTokens += keep.length;
      const step = tidyObject(() => {
        const ids = tf.tensor2d(next, [rows, 1], 'int32'); // [B, 1]
        const pos = tf.tensor2d(positions, [rows, 1], 'float32'); // [B, 1]
        const mask = c.extendedMask(); // [B, Tk+1]
        const out = model.forwardCached(ids, pos, mask, c.past, true, headT);
        return { logits: out.logits, kv: out.kv, mask };
      });
      cache.update(step.kv, step.mask);
      logits = step.logits;
    }
  } finally {
    logits?.dispose();
    cache?.dispose();
    for (const p of pres) {
      p.logits.dispose();
      p.cache.dispose();
    }
  }
}
