import { z } from 'zod';

/**
 * Bounds shared by config keys and the CLI flags that feed them (src/recipes/commands.ts), so a key
 * and its flag refuse the same values (docs/limits.md).
 */

/** A help text without its final period, to append a bound to. */
const bare = (what: string): string => what.replace(/\.$/, '');

/**
 * Most milliseconds a Node timer holds: setTimeout and AbortSignal.timeout take a 32-bit signed
 * delay and fire after 1 ms for anything larger, so a longer limit would fail every call at once.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Most seconds of a setting that becomes a timer's milliseconds (x 1000): about 24.8 days. */
export const MAX_TIMER_S = Math.floor(MAX_TIMER_MS / 1000);

/** A timer's milliseconds: a positive integer of at most MAX_TIMER_MS. */
export const timerMs = (dflt: number, what: string) =>
  z
    .number()
    .int()
    .positive()
    .max(MAX_TIMER_MS, `at most ${MAX_TIMER_MS} ms (2^31 - 1, the longest delay a Node timer holds)`)
    .default(dflt)
    .describe(`${bare(what)} (at most 2^31 - 1 ms, the longest delay a Node timer holds).`);

/** A timer's seconds: positive, at most MAX_TIMER_S once multiplied into milliseconds. */
export const timerSeconds = (dflt: number, what: string) =>
  z
    .number()
    .positive()
    .max(MAX_TIMER_S, `at most ${MAX_TIMER_S} s (2^31 - 1 ms, the longest delay a Node timer holds)`)
    .default(dflt)
    .describe(`${bare(what)} (at most ${MAX_TIMER_S} s: 2^31 - 1 ms, the longest delay a Node timer holds).`);

/**
 * Most RL, SFT or DPO steps (and step intervals): a step takes seconds at the least, so a million
 * is weeks of work; more is a typo.
 */
export const MAX_STEPS = 1_000_000;

/** Most sequences of one training or inference batch that a process holds at once (micro-batches, SFT/DPO batches). */
export const MAX_BATCH = 4096;

/**
 * Most positions of a context (rollout.maxContext, maxNewTokens, model.init.maxPositions): 2^20, eight
 * times the longest context of released checkpoints; a model's own max_position_embeddings is checked too.
 */
export const MAX_POSITIONS = 2 ** 20;

/** Largest vocabulary (model.init.vocab, top-k): 2^22, sixteen times the largest of released checkpoints (262,144). */
export const MAX_VOCAB = 2 ** 22;

/** Most wasm threads (run.threads, `doctor --threads`); 0 means all cores. */
export const MAX_THREADS = 1024;

/** An integer count in min..max with its default and help text (the bound is named in the help). */
export const count = (min: number, max: number, dflt: number, what: string) =>
  z
    .number()
    .int()
    .min(min)
    .max(max)
    .default(dflt)
    .describe(`${bare(what)} (${min}..${max}).`);
