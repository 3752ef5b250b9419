/**
 * The SFT stage shared by `sharp sft` and `sharp train`: load the checkpoint at
 * `fromDir`, train it on the transcripts with the train.sft settings, save it (atomically) to
 * `toDir` with the tokenizer files. Metrics go to `<runDir>/sft-metrics.jsonl`, checkpoints every
 * train.sft.checkpointEvery steps (0: train.checkpointEvery) to `<runDir>/sft-checkpoints/`; when
 * the run folder holds one, the stage continues from the latest instead of `fromDir`.
 */
import { join } from 'node:path';
import type { Config } from '../../config/schema.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import type { Transcript } from '../../rollout/transcripts.ts';
import type { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { configHash, SFT_CHECKPOINTS_DIR } from '../../train/checkpoints/checkpoint.ts';
import { phaseResumePoint } from '../../train/checkpoints/phase-checkpoints.ts';
import { runSft, type SftRunResult } from '../../train/supervised/sft-loop.ts';
import { companionFiles, saveModelAtomic } from './save-model.ts';
import { optimizerSettings } from '../../train/optim/optimizer.ts';
import { trainingSetup } from '../../train/optim/trainable.ts';

/** With train.lora, the SFT adapters in PEFT's layout (the saved model has them merged). */
const SFT_ADAPTER_DIR = 'sft-adapter';

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
  /** Called before training when it continues from a checkpoint of the run. */
  onResume?: (step: number, dir: string) => void;
}): Promise<SftStageResult> {
  const t0 = performance.now();
  const s = o.cfg.train.sft;
  const hash = configHash(o.cfg);
  const resume = await phaseResumePoint(o.runDir, SFT_CHECKPOINTS_DIR, hash);
  if (resume) o.onResume?.(resume.state.step, resume.dir);
  const model = await CausalLM.load(resume?.dir ?? o.fromDir);
  try {
    const res = await runSft({
      model,
      enc: o.tokenizer,
      padId: o.tokenizer.padId,
      transcripts: o.transcripts,
      steps: s.steps,
      batch: s.batch,
      optimizer: optimizerSettings(o.cfg.train, 'sft'),
      training: trainingSetup(o.cfg.train),
      microBatch: o.cfg.train.microBatch,
      gradClip: o.cfg.train.gradClip,
      seed: o.cfg.run.seed,
      maxTokens: o.cfg.rollout.maxContext,
      runDir: o.runDir,
      checkpoints: {
        runDir: o.runDir,
        folder: SFT_CHECKPOINTS_DIR,
        every: s.checkpointEvery > 0 ? s.checkpointEvery : o.cfg.train.checkpointEvery,
        keep: o.cfg.train.keepCheckpoints,
        configHash: hash,
        copyFiles: companionFiles(o.fromDir),
        resume,
      },
      onStep: o.onStep,
    });
    const dir = await saveModelAtomic(model, o.toDir, o.fromDir); // with LoRA: the adapters merged in
    if (model.lora) await model.saveAdapters(join(o.runDir, SFT_ADAPTER_DIR)); // and apart, in PEFT's layout
    return { ...res, dir, seconds: (performance.now() - t0) / 1000 };
  } finally {
    model.dispose();
  }
}
