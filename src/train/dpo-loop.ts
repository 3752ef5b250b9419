import { join } from 'node:path';
import type { PreferencePair } from '../credit/first-error.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { GradientAccumulator } from './accumulate.ts';
import { AdamW } from './adamw.ts';
import { dpoUpdate } from './dpo.ts';
import { JsonlMetrics } from './metrics/jsonl.ts';
import { capLength, pairSequences, type ChatEncoder, type PairSequences } from './sequences.ts';

/**
 * `sharp dpo` (issue 6 item 5): the credit module's preference pairs (failure path, credit/pairs-jsonl.ts)
 * -> chosen / rejected sequences over the shared prefix -> `steps` DPO updates of `batch` pairs
 * drawn in seeded epochs, against a frozen reference (a second copy of the starting checkpoint).
 * Metrics under `dpo/*`. The model is trained in place; the caller saves it.
 */
export interface DpoRunOptions {
  model: CausalLM;
  /** Frozen reference (load the starting checkpoint a second time); absent: the policy before each update. */
  ref?: CausalLM;
  enc: ChatEncoder;
  padId: number;
  pairs: readonly PreferencePair[];
  steps: number;
  batch: number;
  lr: number;
  beta: number;
  microBatch: number;
  gradClip: number;
  seed: number;
  maxTokens?: number;
  runDir?: string;
  onStep?: (step: number, stats: Record<string, number>) => void;
}

export function runDpo(o: DpoRunOptions): { steps: number; pairs: number; dropped: number; first: Record<string, number>; last: Record<string, number> } {
  const all = o.pairs.map((p) => pairSequences(p, o.enc));
  const fits = (p: PairSequences): boolean => o.maxTokens === undefined || capLength([p.chosen, p.rejected], o.maxTokens).dropped === 0;
  const pairs = all.filter(fits);
  if (pairs.length === 0) throw new Error('dpo: no preference pairs (or none fits the context)');
  const rng = new Rng(o.seed);
  const optimizer = new AdamW({ lr: o.lr });
  const accumulator = new GradientAccumulator(o.model.trainableVariables());
  const metrics = o.runDir ? new JsonlMetrics(join(o.runDir, 'dpo-metrics.jsonl')) : undefined;
  let order: number[] = [];
  let pos = 0;
  let first: Record<string, number> = {};
  let last: Record<string, number> = {};
  try {
    for (let step = 0; step < o.steps; step++) {
      const pick: PairSequences[] = [];
      while (pick.length < Math.min(o.batch, pairs.length)) {
        if (pos >= order.length) {
          order = rng.shuffle(pairs.map((_, i) => i));
          pos = 0;
        }
        pick.push(pairs[order[pos++] as number] as PairSequences);
      }
      const s = dpoUpdate({ model: o.model, ref: o.ref, optimizer, accumulator, lr: o.lr, padId: o.padId }, pick, { beta: o.beta, microBatch: o.microBatch, weight: 1, gradClip: o.gradClip });
      const record = Object.fromEntries(Object.entries(s).map(([k, v]) => [`dpo/${k}`, v]));
      if (step === 0) first = record;
      last = record;
      metrics?.write(step + 1, record);
      o.onStep?.(step + 1, record);
    }
  } finally {
    accumulator.dispose();
    optimizer.dispose();
  }
  return { steps: o.steps, pairs: pairs.length, dropped: all.length - pairs.length, first, last };
}
