import { fusedAdamWReady } from '../../backend/native/index.ts';
import type { Config } from '../../config/schema.ts';
import { AdamW } from './adamw.ts';

/**
 * The optimizer of every trainer (GRPO, SFT, DPO), read from the config in one place
 * (optimizerSettings): AdamW with the config's betas, eps and weight decay (createAdamW; the fused
 * native step where the native kernels serve the active backend: wasm or native), and the learning rate of
 * each step from the schedule (learningRateAt), which the loop computes once per step and hands to
 * the AdamW step.
 */
type ScheduleKind = 'constant' | 'cosine';

export interface OptimizerSettings {
  /** Peak learning rate. */
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  schedule: ScheduleKind;
  warmupSteps: number;
  /** Floor of the cosine, as a fraction of the peak. */
  minLrRatio: number;
  /** Updates of the whole run (where the cosine reaches its floor). */
  totalSteps: number;
  /** Fused native step; default: whenever the native kernels are loaded on wasm. */
  fused?: boolean;
}

/**
 * The settings of one trainer from the parsed config section (its schema holds the defaults):
 * train.beta1 / beta2 / adamEps / weightDecay / minLrRatio for all of them; the GRPO loop's lr and
 * schedule (train.lr, schedule, warmupSteps, steps), SFT's own (train.sft.lr, schedule,
 * warmupSteps, steps), DPO's own lr at a constant rate over train.dpo.steps.
 */
export function optimizerSettings(t: Config['train'], phase: 'grpo' | 'sft' | 'dpo'): OptimizerSettings {
  const adam = { beta1: t.beta1, beta2: t.beta2, eps: t.adamEps, weightDecay: t.weightDecay, minLrRatio: t.minLrRatio };
  if (phase === 'sft')
    return { ...adam, lr: t.sft.lr, schedule: t.sft.schedule, warmupSteps: t.sft.warmupSteps, totalSteps: t.sft.steps };
  if (phase === 'dpo') return { ...adam, lr: t.dpo.lr, schedule: 'constant', warmupSteps: 0, totalSteps: t.dpo.steps };
  return { ...adam, lr: t.lr, schedule: t.schedule, warmupSteps: t.warmupSteps, totalSteps: t.steps };
}

/** Whether the fused native AdamW step can run now (the addon's kernels serve the active backend: wasm or native). */
export function fusedAdamWAvailable(): boolean {
  return fusedAdamWReady();
}

/** AdamW with the settings' betas, eps and weight decay; its learning rate comes with each step. */
export function createAdamW(s: OptimizerSettings): AdamW {
  return new AdamW({
    beta1: s.beta1,
    beta2: s.beta2,
    eps: s.eps,
    weightDecay: s.weightDecay,
    fused: s.fused ?? fusedAdamWAvailable(),
  });
}

/**
 * Learning-rate schedule: linear warmup, then constant or cosine decay.
 * `step` is 0-based (the update about to be taken). Warmup reaches the peak at step warmup - 1:
 * lr = peak * (step + 1) / warmup, so step 0 is already a (small) update rather than a wasted one
 * with lr 0 (nanoGPT get_lr). Cosine (Loshchilov & Hutter 2017, SGDR) runs from the peak at step
 * `warmup` to minLr at step `total` and stays there: lr = minLr + (peak - minLr) (1 + cos(pi p)) / 2,
 * p = (step - warmup) / (total - warmup).
 */
export function learningRateAt(
  step: number,
  s: Pick<OptimizerSettings, 'lr' | 'schedule' | 'warmupSteps' | 'totalSteps' | 'minLrRatio'>,
): number {
  if (!Number.isInteger(step) || step < 0)
    throw new Error(`learningRateAt: step must be a non-negative integer, got ${step}`);
  const peak = s.lr;
  if (step < s.warmupSteps) return (peak * (step + 1)) / s.warmupSteps;
  if (s.schedule === 'constant') return peak;
  const minLr = peak * s.minLrRatio;
  const span = s.totalSteps - s.warmupSteps;
  const p = span <= 0 ? 1 : Math.min(1, (step - s.warmupSteps) / span);
  return minLr + ((peak - minLr) * (1 + Math.cos(Math.PI * p))) / 2;
}
