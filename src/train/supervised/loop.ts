import { join } from 'node:path';
import type { CausalLM } from '../../model/causal-lm.ts';
import {
  maybeSavePhase,
  phaseCheckpointDue,
  resumePhase,
  type PhaseCheckpoints,
} from '../checkpoints/phase-checkpoints.ts';
import { JsonlMetrics } from '../metrics/jsonl.ts';
import { GradientAccumulator } from '../optim/accumulate.ts';
import { assertFiniteWeights } from '../optim/diverged.ts';
import type { AdamW } from '../optim/adamw.ts';
import { createAdamW, learningRateAt, type OptimizerSettings } from '../optim/optimizer.ts';
import { EpochOrder } from './epoch-order.ts';
import { prepareForTraining, type TrainingSetup } from '../optim/trainable.ts';

/**
 * The loop SFT and DPO share: `steps` updates of `batch` items drawn in seeded epochs (shuffle,
 * then walk), AdamW from the phase's settings (optimizerSettings(cfg.train, 'sft' | 'dpo')), the lr of
 * each step computed here once (learningRateAt) and handed to the update, per-step
 * metrics to `<runDir>/<metricsFile>`, a checkpoint every `checkpoints.every` steps. With
 * `checkpoints.resume` (whose weights, or adapters, the caller loaded into `model`) it continues after that step
 * with the items an uninterrupted run would draw, and the metrics file is cut back to that step.
 * Before a checkpoint and after the last step (the caller then saves the model) every weight must
 * be finite: a finite gradient can still push weights to Inf.
 */
export interface SupervisedLoopOptions<T> {
  /** What the one-line errors call the phase. */
  phase: 'sft' | 'dpo';
  model: CausalLM;
  items: readonly T[];
  steps: number;
  batch: number;
  seed: number;
  /** Peak lr, schedule, betas, eps, weight decay: optimizerSettings(cfg.train, phase). */
  optimizer: OptimizerSettings;
  /** LoRA and memory settings (trainingSetup(cfg.train)); applied before the optimizer is built. */
  training?: TrainingSetup;
  runDir?: string;
  metricsFile: string;
  checkpoints?: PhaseCheckpoints;
  onStep?: (step: number, stats: Record<string, number>) => void;
  /** One update on the drawn items; returns the step's metrics. */
  update: (
    u: { optimizer: AdamW; accumulator: GradientAccumulator; lr: number; step: number },
    items: T[],
  ) => Record<string, number>;
  /** What the checkpoints keep besides weights, optimizer and data order (e.g. the first loss). */
  extra: () => Record<string, unknown>;
}

export async function supervisedLoop<T>(o: SupervisedLoopOptions<T>): Promise<void> {
  const order = new EpochOrder(o.items.length, o.seed, o.checkpoints?.resume?.state.dataCursor ?? 0);
  prepareForTraining(o.model, o.training, o.seed);
  const optimizer = createAdamW(o.optimizer);
  const accumulator = new GradientAccumulator(o.model.trainableVariables());
  try {
    const start = await resumePhase(o.checkpoints, o.model, optimizer, order);
    const metrics = o.runDir ? new JsonlMetrics(join(o.runDir, o.metricsFile), { resumeStep: start }) : undefined;
    for (let step = start; step < o.steps; step++) {
      const pick = order.take(Math.min(o.batch, o.items.length)).map((i) => o.items[i] as T);
      const lr = learningRateAt(step, o.optimizer);
      const record = o.update({ optimizer, accumulator, lr, step }, pick);
      metrics?.write(step + 1, record);
      o.onStep?.(step + 1, record);
      if (step + 1 === o.steps || phaseCheckpointDue(o.checkpoints, step + 1, o.steps)) {
        assertFiniteWeights(step + 1, o.phase, o.model.trainableVariables());
      }
      await maybeSavePhase(o.checkpoints, step + 1, o.steps, { model: o.model, optimizer, order, extra: o.extra() });
    }
  } finally {
    accumulator.dispose();
    optimizer.dispose();
  }
}
