import type { PreferencePair } from '../../credit/first-error.ts';
import type { CausalLM } from '../../model/causal-lm.ts';
import type { OptimizerSettings } from '../optim/optimizer.ts';
import type { TrainingSetup } from '../optim/trainable.ts';
import { supervisedLoop } from './loop.ts';
import { dpoUpdate } from './dpo.ts';
import type { PhaseCheckpoints } from '../checkpoints/phase-checkpoints.ts';
import { capLength, pairSequences, type ChatEncoder, type PairSequences } from '../batches/sequences.ts';

/**
 * `sharp dpo`: the credit module's preference pairs (failure path, credit/pairs-jsonl.ts)
 * -> chosen / rejected sequences over the shared prefix -> `steps` DPO updates of `batch` pairs
 * drawn in seeded epochs, against a frozen reference (a second copy of the starting checkpoint, or
 * with LoRA the base model with its adapters disabled).
 * Metrics under `dpo/*`. The model is trained in place; the caller saves it. Checkpoints and
 * resume as runSft's (sft-loop.ts): the caller loads `checkpoints.resume`'s weights into `model`
 * (the reference stays the starting checkpoint).
 */
export interface DpoRunOptions {
  model: CausalLM;
  /**
   * Frozen reference (load the starting checkpoint a second time); absent: with LoRA adapters the
   * base model with adapters disabled (no copy), else the policy before each update.
   */
  ref?: CausalLM;
  /** LoRA adapters (only they train) and the memory settings of the training forward. */
  training?: TrainingSetup;
  enc: ChatEncoder;
  padId: number;
  pairs: readonly PreferencePair[];
  steps: number;
  batch: number;
  /** Peak lr, schedule, betas, eps, weight decay: optimizerSettings(cfg.train, 'dpo'). */
  optimizer: OptimizerSettings;
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
  const fits = (p: PairSequences): boolean =>
    o.maxTokens === undefined || capLength([p.chosen, p.rejected], o.maxTokens).dropped === 0;
  const pairs = all.filter(fits);
  if (pairs.length === 0) throw new Error('dpo: no preference pairs (or none fits the context)');
  const resume = o.checkpoints?.resume;
  const saved = resume?.state.extra?.first;
  let first: Record<string, number> = saved && typeof saved === 'object' ? (saved as Record<string, number>) : {};
  let last: Record<string, number> = {};
  let base: CausalLM | undefined; // the adapters-disabled view, made once adapters are attached
  await supervisedLoop({
    ...o,
    phase: 'dpo',
    items: pairs,
    metricsFile: 'dpo-metrics.jsonl',
    extra: () => ({ first }),
    update: ({ optimizer, accumulator, lr, step }, pick) => {
      const ref = o.ref ?? (o.model.lora ? (base ??= o.model.baseView()) : undefined);
      const record = dpoUpdate({ model: o.model, ref, optimizer, accumulator, lr, padId: o.padId }, pick, {
        beta: o.beta,
        microBatch: o.microBatch,
        weight: 1,
        gradClip: o.gradClip,
      });
      if (step === 0) first = record;
      last = record;
      return record;
    },
  });
  return {
    steps: o.steps,
    pairs: pairs.length,
    dropped: all.length - pairs.length,
    first,
    last,
    resumedFrom: resume?.state.step,
  };
}
