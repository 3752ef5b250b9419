import * as tf from '@tensorflow/tfjs';
import { nativeStatus } from '../../backend/native/index.ts';
import type { Config } from '../../config/schema.ts';
import { AdamW } from './adamw.ts';
import { learningRateAt, type ScheduleKind } from './schedule.ts';

/**
 * The one optimizer factory of every trainer (GRPO, SFT, DPO): AdamW with the config's betas, eps
 * and weight decay, the learning rate of each step from the schedule (linear warmup, then constant
 * or cosine down to minLrRatio of the peak over totalSteps), and the fused native AdamW step where
 * the native kernels are loaded on the wasm backend.
 */
export interface OptimizerSettings {
  /** Peak learning rate. */
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  schedule: ScheduleKind;
  warmupSteps: number;
  minLrRatio: number;
  /** Updates of the whole run (where the cosine reaches its floor). */
  totalSteps: number;
  /** Fused native step; default: whenever the native kernels are loaded on wasm. */
  fused?: boolean;
}

/** Adam's usual constants and a constant rate: what a trainer gets for any setting left out. */
export const OPTIMIZER_DEFAULTS: Omit<OptimizerSettings, 'lr' | 'totalSteps'> = {
  beta1: 0.9,
  beta2: 0.999,
  eps: 1e-8,
  weightDecay: 0,
  schedule: 'constant',
  warmupSteps: 0,
  minLrRatio: 0,
};

/** What a supervised loop takes besides its peak lr and step count (all optional: OPTIMIZER_DEFAULTS). */
export type OptimizerOverrides = Partial<Omit<OptimizerSettings, 'lr' | 'totalSteps'>>;

export interface TrainOptimizer {
  adamw: AdamW;
  /** The learning rate of the update about to be taken at 0-based `step`. */
  lrAt(step: number): number;
}

/** Whether the fused native AdamW step can run now (addon kernels registered, wasm backend active). */
export function fusedAdamWAvailable(): boolean {
  return nativeStatus().mode === 'native' && tf.getBackend() === 'wasm';
}

export function createOptimizer(s: OptimizerSettings): TrainOptimizer {
  const lrAt = (step: number): number => learningRateAt(step, { kind: s.schedule, peak: s.lr, warmupSteps: s.warmupSteps, totalSteps: s.totalSteps, minLrRatio: s.minLrRatio });
  const adamw = new AdamW({ lr: lrAt(0), beta1: s.beta1, beta2: s.beta2, eps: s.eps, weightDecay: s.weightDecay, fused: s.fused ?? fusedAdamWAvailable() });
  return { adamw, lrAt };
}

/**
 * The settings of one trainer from the config: train.beta1 / beta2 / adamEps / weightDecay for all
 * of them; the GRPO loop's lr and schedule (train.lr, schedule, warmupSteps, minLrRatio, steps), SFT's
 * own (train.sft.lr, schedule, warmupSteps, steps; cosine floor minLrRatio), DPO's own lr at a
 * constant rate over train.dpo.steps.
 */
export function optimizerSettings(t: Config['train'], phase: 'grpo' | 'sft' | 'dpo'): OptimizerSettings {
  const adam = { beta1: t.beta1, beta2: t.beta2, eps: t.adamEps, weightDecay: t.weightDecay, minLrRatio: t.minLrRatio };
  if (phase === 'sft') return { ...adam, lr: t.sft.lr, schedule: t.sft.schedule, warmupSteps: t.sft.warmupSteps, totalSteps: t.sft.steps };
  if (phase === 'dpo') return { ...adam, lr: t.dpo.lr, schedule: 'constant', warmupSteps: 0, totalSteps: t.dpo.steps };
  return { ...adam, lr: t.lr, schedule: t.schedule, warmupSteps: t.warmupSteps, totalSteps: t.steps };
}
