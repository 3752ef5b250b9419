import type { Config } from '../config/schema.ts';
import { CausalLM } from '../model/causal-lm.ts';
import type { Transcript } from '../rollout/transcripts.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import { runSft, type SftRunResult } from '../train/sft-loop.ts';
import { saveModelAtomic } from './save-model.ts';

/**
 * The SFT stage shared by `sharp sft` and `sharp train` (issue 6 item 5): load the checkpoint at
 * `fromDir`, train it on the transcripts with the train.sft settings, save it (atomically) to
 * `toDir` with the tokenizer files. Metrics go to `<runDir>/sft-metrics.jsonl`.
 */
export interface SftStageResult extends SftRunResult {
  dir: string;
  seconds: number;
}

export async function sftStage(o: {
  cfg: Config;
  fromDir: string;
  toDir: string;
  runDir: string;
  tokenizer: Tokenizer;
  transcripts: readonly Transcript[];
  onStep?: (step: number, stats: Record<string, number>) => void;
}): Promise<SftStageResult> {
  const t0 = performance.now();
  const s = o.cfg.train.sft;
  const model = await CausalLM.load(o.fromDir);
  try {
    const res = runSft({
      model,
      enc: o.tokenizer,
      padId: o.tokenizer.padId,
      transcripts: o.transcripts,
      steps: s.steps,
      batch: s.batch,
      lr: s.lr,
      schedule: s.schedule,
      warmupSteps: s.warmupSteps,
      microBatch: o.cfg.train.microBatch,
      gradClip: o.cfg.train.gradClip,
      seed: o.cfg.run.seed,
      weightDecay: o.cfg.train.weightDecay,
      maxTokens: o.cfg.rollout.maxContext,
      runDir: o.runDir,
      onStep: o.onStep,
    });
    const dir = await saveModelAtomic(model, o.toDir, o.fromDir);
    return { ...res, dir, seconds: (performance.now() - t0) / 1000 };
  } finally {
    model.dispose();
  }
}
