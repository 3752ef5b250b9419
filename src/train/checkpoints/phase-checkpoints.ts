import { UserError } from '../../errors.ts';
import type { AdamW } from '../optim/adamw.ts';
import {
  assertSameConfig,
  latestCheckpoint,
  loadOptimizerState,
  readTrainerState,
  saveCheckpoint,
  type CheckpointModel,
  type TrainerState,
} from './checkpoint.ts';
import type { EpochOrder } from '../supervised/epoch-order.ts';

/**
 * Checkpoints of the supervised phases (SFT, DPO), in a folder of their own in the run
 * (SFT_CHECKPOINTS_DIR / DPO_CHECKPOINTS_DIR of checkpoint.ts), with the RL loop's layout: weights,
 * AdamW state, and trainer_state.json (step, data cursor of the EpochOrder, its RNG state, config
 * hash). The caller loads the resumed model from `resume.dir`; the loop loads the optimizer state
 * and restarts the data order at the saved cursor.
 */
export interface ResumePoint {
  dir: string;
  state: TrainerState;
}

export interface PhaseCheckpoints {
  runDir: string;
  /** Folder of the run (SFT_CHECKPOINTS_DIR or DPO_CHECKPOINTS_DIR). */
  folder: string;
  /** Steps between checkpoints. */
  every: number;
  /** Checkpoints kept (oldest deleted). */
  keep: number;
  configHash: string;
  /** Tokenizer and generation files copied into every checkpoint, so each loads alone. */
  copyFiles?: readonly string[];
  /** The checkpoint to continue from (phaseResumePoint); its weights are already in the model. */
  resume?: ResumePoint;
}

/** The latest complete checkpoint of a phase, refused (one line, exit 2) when written under another config. */
export async function phaseResumePoint(runDir: string, folder: string, hash: string): Promise<ResumePoint | undefined> {
  const latest = await latestCheckpoint(runDir, folder);
  if (!latest) return undefined;
  const state = await readTrainerState(latest.dir);
  assertSameConfig(latest.dir, state, hash);
  return { dir: latest.dir, state };
}

/** Loads the optimizer state of `ck.resume` and checks the replayed data order; returns the step to continue after. */
export async function resumePhase(
  ck: PhaseCheckpoints | undefined,
  model: CheckpointModel,
  optimizer: AdamW,
  order: EpochOrder,
): Promise<number> {
  if (!ck?.resume) return 0;
  await loadOptimizerState(ck.resume.dir, model, optimizer);
  if (JSON.stringify(order.rngState()) !== JSON.stringify(ck.resume.state.rng)) {
    throw new UserError(
      `resume: ${ck.resume.dir} was written over other training data (its data order does not replay); start a new run`,
    );
  }
  return ck.resume.state.step;
}

/**
 * Saves a checkpoint after `step` when it is due (every `ck.every` steps, not the last: the caller saves the result).
 */
/**
 * Whether step `step` of `total` writes a checkpoint: every `every` steps, the last one excepted (the caller saves the
 * model then).
 */
export function phaseCheckpointDue(
  ck: PhaseCheckpoints | undefined,
  step: number,
  total: number,
): ck is PhaseCheckpoints {
  return ck !== undefined && step % ck.every === 0 && step < total;
}

export async function maybeSavePhase(
  ck: PhaseCheckpoints | undefined,
  step: number,
  total: number,
  o: { model: CheckpointModel; optimizer: AdamW; order: EpochOrder; extra?: Record<string, unknown> },
): Promise<void> {
  if (!phaseCheckpointDue(ck, step, total)) return;
  const state: TrainerState = {
    step,
    dataCursor: o.order.cursor,
    rng: o.order.rngState(),
    configHash: ck.configHash,
    extra: o.extra,
  };
  await saveCheckpoint(ck.runDir, {
    model: o.model,
    optimizer: o.optimizer,
    state,
    keep: ck.keep,
    copyFiles: ck.copyFiles,
    folder: ck.folder,
  });
}
