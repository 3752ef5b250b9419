import * as tf from '@tensorflow/tfjs';
import { generate, type GenerateRequest } from '../../src/generation/generate.ts';
import { emptyPrefillStats } from '../../src/generation/prefill.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { hfConfigFor } from '../../src/model/config.ts';
import { Rng } from '../../src/random/rng.ts';
import { BENCH_MODEL } from './model.ts';
import type { BenchRow } from './types.ts';
import { median } from './median.ts';

/**
 * Prefix section of `npm run bench`: a credit-style replay batch, 8 counterfactual
 * replays of one ~300-token planner context that differ only in a 20-token tail (the substituted
 * report), generated with shared-prefix reuse on and off on the bench model (scripts/bench/model.ts).
 * Reports prefill tokens and the wall time of the prefill (1 new token) and of a short turn (16).
 */
export const REPLAYS = 8;
export const CONTEXT = 300;
export const TAIL = 20;

export function replayBatch(vocab: number, newTokens: number): GenerateRequest[] {
  const rng = new Rng(3);
  const ids = (n: number): number[] => Array.from({ length: n }, () => rng.int(1, vocab - 1));
  const ctx = ids(CONTEXT);
  return Array.from({ length: REPLAYS }, () => ({ promptIds: [...ctx, ...ids(TAIL)], maxNewTokens: newTokens }));
}

async function timed(
  model: CausalLM,
  reqs: GenerateRequest[],
  prefixMinTokens: number,
  reps: number,
): Promise<{ ms: number; tokens: number }> {
  const decoder = { decode: (ids: readonly number[]): string => ids.join(' ') }; // no tokenizer; the text is not used
  const times: number[] = [];
  let tokens = 0;
  for (let i = 0; i < reps + 1; i++) {
    const stats = emptyPrefillStats();
    const t0 = performance.now();
    await generate(model, reqs, {
      temperature: 1,
      topK: 0,
      topP: 1,
      rng: new Rng(i),
      eosIds: [],
      decoder,
      prefixMinTokens,
      stats,
    });
    if (i > 0) times.push(performance.now() - t0); // the first run warms the kernels
    tokens = stats.prefillTokens;
  }
  return { ms: median(times), tokens };
}

export async function benchPrefix(quick = false): Promise<BenchRow[]> {
  const model = CausalLM.random(hfConfigFor(BENCH_MODEL), 1);
  const reps = quick ? 1 : 5;
  const before = tf.memory().numTensors;
  try {
    const rows: BenchRow[] = [];
    const label = `${REPLAYS} replays of a ${CONTEXT}+${TAIL}-token context`;
    for (const newTokens of [1, 16]) {
      const reqs = replayBatch(BENCH_MODEL.vocab, newTokens);
      const off = await timed(model, reqs, 0, reps);
      const on = await timed(model, reqs, 16, reps);
      if (newTokens === 1) {
        rows.push(
          { section: 'prefix', metric: `prefill tokens, ${label}, reuse off`, value: off.tokens, unit: 'tokens' },
          { section: 'prefix', metric: `prefill tokens, ${label}, reuse on`, value: on.tokens, unit: 'tokens' },
        );
      }
      rows.push(
        { section: 'prefix', metric: `generate ${newTokens} tok, ${label}, reuse off`, value: off.ms, unit: 'ms' },
        { section: 'prefix', metric: `generate ${newTokens} tok, ${label}, reuse on`, value: on.ms, unit: 'ms' },
        {
          section: 'prefix',
          metric: `generate ${newTokens} tok, speedup from reuse`,
          value: off.ms / on.ms,
          unit: 'x',
        },
      );
    }
    rows.push({
      section: 'prefix',
      metric: 'prefix reuse tensor leak',
      value: tf.memory().numTensors - before,
      unit: 'tensors',
      target: '0',
    });
    return rows;
  } finally {
    model.dispose();
  }
}
