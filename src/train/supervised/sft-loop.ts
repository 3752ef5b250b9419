import type { CausalLM } from '../../model/causal-lm.ts';
import type { Transcript } from '../../rollout/transcripts.ts';
import type { PhaseCheckpoints } from '../checkpoints/phase-checkpoints.ts';
import type { OptimizerSettings } from '../optim/optimizer.ts';
import { supervisedLoop } from './loop.ts';
import { capLength, transcriptSequences, type ChatEncoder, type SftSequence } from '../batches/sequences.ts';
import { sftUpdate } from './sft.ts';
import { atStep } from '../optim/diverged.ts';
import type { TrainingSetup } from '../optim/trainable.ts';

/**
 * The SFT phase (`sharp sft`, the quickstart's warm start): transcripts -> one
 * sequence per trained turn -> `steps` updates of `batch` sequences drawn in seeded epochs
 * (shuffle, then walk) -> metrics under `sft/*`. The model is trained in place; the caller saves it.
 * With `checkpoints`, a checkpoint every `every` steps; with `checkpoints.resume` (whose weights
 * the caller loaded into `model`), it continues after that step with the batches an uninterrupted
 * run would draw, and the metrics file is cut back to that step first.
 */
export interface SftRunOptions {
  model: CausalLM;
  enc: ChatEncoder;
  padId: number;
  transcripts: readonly Transcript[];
  steps: number;
  batch: number;
  microBatch: number;
  gradClip: number;
  seed: number;
  /** Peak lr, schedule, betas, eps, weight decay: optimizerSettings(cfg.train, 'sft'). */
  optimizer: OptimizerSettings;
  /** LoRA adapters (only they train) and the memory settings of the training forward. */
  training?: TrainingSetup;
  /** Sequences longer than this are dropped (rollout.maxContext). */
  maxTokens?: number;
  /** When set, per-step metrics go to `<runDir>/sft-metrics.jsonl`. */
  runDir?: string;
  checkpoints?: PhaseCheckpoints;
  onStep?: (step: number, stats: Record<string, number>) => void;
}

export interface SftRunResult {
  steps: number;
  sequences: number;
  dropped: number;
  firstLoss: number;
  lastLoss: number;
  /** The step of the checkpoint it continued from. */
  resumedFrom?: number;
}

function sftSequences(
  transcripts: readonly Transcript[],
  enc: ChatEncoder,
  maxTokens?: number,
): { seqs: SftSequence[]; dropped: number } {
  const all = transcripts.flatMap((t) => transcriptSequences(t, enc));
  const { kept, dropped } = maxTokens ? capLength(all, maxTokens) : { kept: all, dropped: 0 };
  return { seqs: kept, dropped };
}

export async function runSft(o: SftRunOptions): Promise<SftRunResult> {
  const { seqs, dropped } = sftSequences(o.transcripts, o.enc, o.maxTokens);
  if (seqs.length === 0)
    throw new Error('sft: no training sequences (no assistant turn with train = true fits the context)');
  const resume = o.checkpoints?.resume;
  let firstLoss = typeof resume?.state.extra?.firstLoss === 'number' ? resume.state.extra.firstLoss : Number.NaN;
  let lastLoss = Number.NaN;
  await supervisedLoop({
    ...o,
    phase: 'sft',
    items: seqs,
    metricsFile: 'sft-metrics.jsonl',
    extra: () => ({ firstLoss }),
    update: ({ optimizer, accumulator, lr, step }, pick) => {
      const t0 = performance.now();
      const s = atStep(step + 1, 'sft', () =>
        sftUpdate({ model: o.model, optimizer, accumulator, lr, padId: o.padId }, pick, {
          microBatch: o.microBatch,
          gradClip: o.gradClip,
        }),
      );
      const secs = (performance.now() - t0) / 1000;
      if (step === 0) firstLoss = s.loss;
      lastLoss = s.loss;
      return {
        'sft/loss': s.loss,
        'sft/grad_norm': s.gradNorm,
        'sft/tokens': s.tokens,
        'sft/lr': lr,
        'perf/train_tok_s': s.tokens / Math.max(1e-9, secs),
      };
    },
  });
  return { steps: o.steps, sequences: seqs.length, dropped, firstLoss, lastLoss, resumedFrom: resume?.state.step };
}
