import { join } from 'node:path';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import type { Transcript } from '../rollout/transcripts.ts';
import { GradientAccumulator } from './accumulate.ts';
import { AdamW } from './adamw.ts';
import { JsonlMetrics } from './metrics/jsonl.ts';
import { learningRateAt, type ScheduleKind } from './schedule.ts';
import { capLength, transcriptSequences, type ChatEncoder, type SftSequence } from './sequences.ts';
import { sftUpdate } from './sft.ts';
import { atStep } from './diverged.ts';

/**
 * The SFT phase (`sharp sft`, the quickstart's warm start; issue 6 item 5): transcripts -> one
 * sequence per trained turn -> `steps` updates of `batch` sequences drawn in seeded epochs
 * (shuffle, then walk) -> metrics under `sft/*`. The model is trained in place; the caller saves it.
 */
export interface SftRunOptions {
  model: CausalLM;
  enc: ChatEncoder;
  padId: number;
  transcripts: readonly Transcript[];
  steps: number;
  batch: number;
  lr: number;
  microBatch: number;
  gradClip: number;
  seed: number;
  schedule?: ScheduleKind;
  warmupSteps?: number;
  weightDecay?: number;
  /** Sequences longer than this are dropped (rollout.maxContext). */
  maxTokens?: number;
  /** When set, per-step metrics go to `<runDir>/sft-metrics.jsonl`. */
  runDir?: string;
  onStep?: (step: number, stats: Record<string, number>) => void;
}

export interface SftRunResult {
  steps: number;
  sequences: number;
  dropped: number;
  firstLoss: number;
  lastLoss: number;
}

export function sftSequences(transcripts: readonly Transcript[], enc: ChatEncoder, maxTokens?: number): { seqs: SftSequence[]; dropped: number } {
  const all = transcripts.flatMap((t) => transcriptSequences(t, enc));
  const { kept, dropped } = maxTokens ? capLength(all, maxTokens) : { kept: all, dropped: 0 };
  return { seqs: kept, dropped };
}

export function runSft(o: SftRunOptions): SftRunResult {
  const { seqs, dropped } = sftSequences(o.transcripts, o.enc, o.maxTokens);
  if (seqs.length === 0) throw new Error('sft: no training sequences (no assistant turn with train = true fits the context)');
  const rng = new Rng(o.seed);
  const optimizer = new AdamW({ lr: o.lr, weightDecay: o.weightDecay ?? 0 });
  const accumulator = new GradientAccumulator(o.model.trainableVariables());
  const metrics = o.runDir ? new JsonlMetrics(join(o.runDir, 'sft-metrics.jsonl')) : undefined;
  let order: number[] = [];
  let pos = 0;
  let firstLoss = Number.NaN;
  let lastLoss = Number.NaN;
  try {
    for (let step = 0; step < o.steps; step++) {
      const pick: SftSequence[] = [];
      while (pick.length < Math.min(o.batch, seqs.length)) {
        if (pos >= order.length) {
          order = rng.shuffle(seqs.map((_, i) => i));
          pos = 0;
        }
        pick.push(seqs[order[pos++] as number] as SftSequence);
      }
      const lr = learningRateAt(step, { kind: o.schedule ?? 'constant', peak: o.lr, warmupSteps: o.warmupSteps ?? 0, totalSteps: o.steps });
      const t0 = performance.now();
      const s = atStep(step + 1, 'sft', () => sftUpdate({ model: o.model, optimizer, accumulator, lr, padId: o.padId }, pick, { microBatch: o.microBatch, gradClip: o.gradClip }));
      const secs = (performance.now() - t0) / 1000;
      if (step === 0) firstLoss = s.loss;
      lastLoss = s.loss;
      const record = { 'sft/loss': s.loss, 'sft/grad_norm': s.gradNorm, 'sft/tokens': s.tokens, 'sft/lr': lr, 'perf/train_tok_s': s.tokens / Math.max(1e-9, secs) };
      metrics?.write(step + 1, record);
      o.onStep?.(step + 1, record);
    }
  } finally {
    accumulator.dispose();
    optimizer.dispose();
  }
  return { steps: o.steps, sequences: seqs.length, dropped, firstLoss, lastLoss };
}
