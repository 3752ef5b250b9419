import type { Config } from '../../config/schema.ts';
import type { CausalLM } from '../../model/causal-lm.ts';
import type { LoraSettings } from '../../model/lora.ts';

/**
 * What a trainer (GRPO, SFT, DPO) trains and how lean its forward is, from the config: with
 * train.lora.rank > 0 fresh LoRA adapters are attached (unless the model already holds some, as a
 * resumed adapter checkpoint does) and the model's trainableVariables() are then the adapters
 * alone, which is what the gradient accumulator and AdamW are built over; train.logprobChunk and
 * train.checkpointLayers set the training forward's memory settings; train.lora.baseDtype bfloat16
 * packs the frozen base (a model loaded with that option already is).
 */
export interface TrainingSetup {
  /** Undefined: full-parameter training. */
  lora?: LoraSettings;
  logprobChunk: number;
  checkpointLayers: boolean;
  /** Keep the frozen base in bfloat16 (train.lora.baseDtype). */
  bf16Base: boolean;
}

/** Whether a run keeps its frozen base in bfloat16: LoRA with train.lora.baseDtype bfloat16. */
export function bf16BaseOf(t: Pick<Config['train'], 'lora'>): boolean {
  return t.lora.rank > 0 && t.lora.baseDtype === 'bfloat16';
}

export function trainingSetup(t: Pick<Config['train'], 'lora' | 'logprobChunk' | 'checkpointLayers'>): TrainingSetup {
  return {
    lora:
      t.lora.rank > 0
        ? { rank: t.lora.rank, alpha: t.lora.alpha, dropout: t.lora.dropout, targets: [...t.lora.targets] }
        : undefined,
    logprobChunk: t.logprobChunk,
    checkpointLayers: t.checkpointLayers,
    bf16Base: bf16BaseOf(t),
  };
}

/** Applies a setup to a model before its optimizer and accumulator are built; `seed` draws the adapters' A. */
export function prepareForTraining(model: CausalLM, s: TrainingSetup | undefined, seed: number): void {
  if (!s) return;
  model.memory = { logprobChunk: s.logprobChunk, checkpointLayers: s.checkpointLayers };
  if (s.lora && s.bf16Base && !model.bf16Base) model.packBase();
  if (s.lora && !model.lora) model.attachLora(s.lora, seed);
}
