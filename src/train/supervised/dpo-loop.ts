import { join } from 'node:path';
import type { PreferencePair } from '../../credit/first-error.ts';
import type { CausalLM } from '../../model/causal-lm.ts';
import { GradientAccumulator } from '../optim/accumulate.ts';
import { createOptimizer, OPTIMIZER_DEFAULTS, type OptimizerOverrides } from '../optim/optimizer.ts';
import { dpoUpdate } from './dpo.ts';
import { EpochOrder } from './epoch-order.ts';
import { JsonlMetrics } from '../metrics/jsonl.ts';
import { maybeSavePhase, resumePhase, type PhaseCheckpoints } from '../checkpoints/phase-checkpoints.ts';
import { capLength, pairSequences, type ChatEncoder, type PairSequences } from '../batches/sequences.ts';

/**
 * `sharp dpo`: the credit module's preference pairs (failure path, credit/pairs-jsonl.ts)
 * -> chosen / rejected sequences over the shared prefix -> `steps` DPO updates of `batch` pairs
 * drawn in seeded epochs, against a frozen reference (a second copy of the starting checkpoint).
 * Metrics under `dpo/*`. The model is trained in place; the caller saves it. Checkpoints and
 * resume as runSft's (sft-loop.ts): the caller loads `checkpoints.resume`'s weights into `model`
 * (the reference stays the starting checkpoint).
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
  /** Betas, eps, weight decay, schedule (optimizerSettings(cfg.train, 'dpo')); lr and steps above. */
  optimizer?: OptimizerOverrides;
  beta: number;
  microBatch: number;
  gradClip: number;
  seed: number;
  maxTokens?: number;
  runDir?: string;
  checkpoints?: PhaseCheckpoints;
  onStep?: (step: number, stats: Record<string, number>) => void;
}

export interface DpoRunResult {
  steps: number;
  pairs: number;
  dropped: number;
  first: Record<string, number>;
  last: Record<string, number>;
  /** The step of the checkpoint it continued from. */
  resumedFrom?: number;
}

export async function runDpo(o: DpoRunOptions): Promise<DpoRunResult> {
  const all = o.pairs.map((p) => pairSequences(p, o.enc));
  const fits = (p: PairSequences): boolean => o.maxTokens === undefined || capLength([p.chosen, p.rejected], o.maxTokens).dropped === 0;
  const pairs = all.filter(fits);
  if (pairs.length === 0) throw new Error('dpo: no preference pairs (or none fits the context)');
  const resume = o.checkpoints?.resume;
  const order = new EpochOrder(pairs.length, o.seed, resume?.state.dataCursor ?? 0);
  const { adamw: optimizer, lrAt } = createOptimizer({ ...OPTIMIZER_DEFAULTS, ...o.optimizer, lr: o.lr, totalSteps: o.steps });
  const accumulator = new GradientAccumulator(o.model.trainableVariables());
  const saved = resume?.state.extra?.first;
  let first: Record<string, number> = saved && typeof saved === 'object' ? (saved as Record<string, number>) : {};
  let last: Record<string, number> = {};
  try {
    const start = await resumePhase(o.checkpoints, o.model, optimizer, order);
    const metrics = o.runDir ? new JsonlMetrics(join(o.runDir, 'dpo-metrics.jsonl'), { resumeStep: start }) : undefined;
    for (let step = start; step < o.steps; step++) {
      const pick = order.take(Math.min(o.batch, pairs.length)).map((i) => pairs[i] as PairSequences);
      const s = dpoUpdate({ model: o.model, ref: o.ref, optimizer, accumulator, lr: lrAt(step), padId: o.padId }, pick, { beta: o.beta, microBatch: o.microBatch, weight: 1, gradClip: o.gradClip });
      const record = Object.fromEntries(Object.entries(s).map(([k, v]) => [`dpo/${k}`, v]));
      if (step === 0) first = record;
      last = record;
      metrics?.write(step + 1, record);
      o.onStep?.(step + 1, record);
      await maybeSavePhase(o.checkpoints, step + 1, o.steps, { model: o.model, optimizer, order, extra: { first } });
    }
  } finally {
    accumulator.dispose();
    optimizer.dispose();
  }
  return { steps: o.steps, pairs: pairs.length, dropped: all.length - pairs.length, first, last, resumedFrom: resume?.state.step };
}
