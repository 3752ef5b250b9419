import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { readSafetensors, writeSafetensors } from '../../model/io/safetensors.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { isAdapterDir } from '../../model/io/peft.ts';
import { writeJsonAtomic } from '../../fs/atomic.ts';
import { STEP_KEY, type AdamW, type NamedArray } from '../optim/adamw.ts';
import { UserError } from '../../errors.ts';

/**
 * Training checkpoints: `<runDir>/checkpoints/step-NNNNNNNN/`
 * holds the Hugging Face model folder (the model's save(dir): config.json, model.safetensors) or,
 * when training LoRA adapters, only the adapters in PEFT's layout (adapter_config.json naming the
 * base folder, adapter_model.safetensors: saveTrainable), plus
 *   optimizer.safetensors  AdamW moments `<hf name>.exp_avg|exp_avg_sq` (in the Variable layout,
 *                          i.e. linear weights [in, out]; with LoRA the adapters' PEFT names) and `step`;
 *   trainer_state.json     step, data cursor, RNG state, config hash (written last).
 * Crash safety: everything is written into `checkpoints/.tmp-step-NNNNNNNN-<pid>/`, fsynced, and only
 * then renamed to its final name (one atomic rename), so a `step-*` folder is always complete and a
 * crash leaves at most a temp folder, which latestCheckpoint ignores and the next save removes.
 * Optimizer entries are keyed by the model's stable HF names, not tfjs Variable names (those carry
 * a per-process instance prefix such as `lm0/`, which differs when a reference model loads first).
 */

const CHECKPOINTS_DIR = 'checkpoints';
/** SFT and DPO keep theirs apart, so the RL loop's latestCheckpoint never picks one of them. */
export const SFT_CHECKPOINTS_DIR = 'sft-checkpoints';
export const DPO_CHECKPOINTS_DIR = 'dpo-checkpoints';
export const OPTIMIZER_FILE = 'optimizer.safetensors';
const TRAINER_STATE_FILE = 'trainer_state.json';
const STEP_DIR = /^step-(\d{8})$/;
const TEMP_PREFIX = '.tmp-';

const trainerStateSchema = z.strictObject({
  step: z.number().int().nonnegative(),
  /** Position in the training data (questions consumed so far), so a resumed run sees the same data. */
  dataCursor: z.number().int().nonnegative(),
  /** Rng.state() of the run's generator. */
  rng: z.array(z.number()),
  /** configHash() of the run config: resuming under another config is refused unless forced. */
  configHash: z.string(),
  /** Free-form extras (e.g. best held-out accuracy, SFT phase done). */
  extra: z.record(z.string(), z.unknown()).optional(),
});
export type TrainerState = z.infer<typeof trainerStateSchema>;

/** What a checkpoint needs of the model: CausalLM fits. */
export interface CheckpointModel {
  save(dir: string): Promise<void>;
  /** What a checkpoint holds of the model (CausalLM: its adapters alone when it trains LoRA); default save. */
  saveTrainable?(dir: string): Promise<void>;
  /** Stable (HF) name -> Variable. */
  namedVariables(): ReadonlyMap<string, tf.Variable>;
}

export interface SaveOptions {
  model: CheckpointModel;
  optimizer: AdamW;
  state: TrainerState;
  /** Complete checkpoints to keep (oldest deleted); train.keepCheckpoints. */
  keep: number;
  /** Files copied in (tokenizer.json, tokenizer_config.json, ...), so the folder loads on its own. */
  copyFiles?: readonly string[];
  /** Folder of the run holding the checkpoints (default CHECKPOINTS_DIR, the RL loop's). */
  folder?: string;
}

/** Stable JSON (sorted keys) -> sha256 hex: the same config always hashes the same. */
export function configHash(config: unknown): string {
  const canon = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canon)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, x]) => [k, canon(x)]),
          )
        : v;
  return createHash('sha256')
    .update(JSON.stringify(canon(config)))
    .digest('hex');
}

/**
 * The one config check of every resume (RL loop, SFT and DPO phases, `sharp train --resume`): a
 * checkpoint written under another config is refused in one line (exit 2).
 */
export function assertSameConfig(dir: string, state: Pick<TrainerState, 'configHash'>, hash: string): void {
  if (state.configHash !== hash) {
    throw new UserError(
      `resume: ${dir} was written under another config (its config.yaml differs from this one: a --config or ` +
        `--set changed it); resume with the config.yaml of the run (no --config, no --set), or start a new run`,
    );
  }
}

function stepDirName(step: number): string {
  return `step-${String(step).padStart(8, '0')}`;
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Optimizer state keyed by Variable name -> keyed by stable model name (and back). */
function renameKeys(
  state: ReadonlyMap<string, NamedArray>,
  map: ReadonlyMap<string, string>,
  what: string,
): Map<string, NamedArray> {
  const out = new Map<string, NamedArray>();
  for (const [key, arr] of state) {
    if (key === STEP_KEY) {
      out.set(key, arr);
      continue;
    }
    const dot = key.lastIndexOf('.exp_avg');
    const base = key.slice(0, dot);
    const mapped = map.get(base);
    if (dot < 0 || mapped === undefined) throw new Error(`checkpoint: optimizer entry '${key}' names no ${what}`);
    out.set(mapped + key.slice(dot), arr);
  }
  return out;
}

/** Complete checkpoints of a run (in `folder`, default the RL loop's), oldest first. */
export async function listCheckpoints(
  runDir: string,
  folder: string = CHECKPOINTS_DIR,
): Promise<{ step: number; dir: string }[]> {
  const root = join(runDir, folder);
  if (!existsSync(root)) return [];
  const out: { step: number; dir: string }[] = [];
  for (const name of await readdir(root)) {
    const m = STEP_DIR.exec(name);
    if (m && existsSync(join(root, name, TRAINER_STATE_FILE))) out.push({ step: Number(m[1]), dir: join(root, name) });
  }
  return out.sort((a, b) => a.step - b.step);
}

/** The newest complete checkpoint folder of a run (temp folders of crashed saves are ignored). */
export async function latestCheckpoint(
  runDir: string,
  folder: string = CHECKPOINTS_DIR,
): Promise<{ step: number; dir: string } | undefined> {
  const all = await listCheckpoints(runDir, folder);
  return all[all.length - 1];
}

/** Writes a checkpoint for `state.step` (temp folder + rename) and prunes to the newest `keep`. */
export async function saveCheckpoint(runDir: string, o: SaveOptions): Promise<string> {
  if (!(Number.isInteger(o.keep) && o.keep >= 1))
    throw new Error(`checkpoint: keep must be an integer >= 1, got ${o.keep}`);
  trainerStateSchema.parse(o.state);
  const folder = o.folder ?? CHECKPOINTS_DIR;
  const root = join(runDir, folder);
  await mkdir(root, { recursive: true });
  // Leftovers of crashed saves (one writer per run folder, so none of them is in progress).
  for (const name of await readdir(root))
    if (name.startsWith(TEMP_PREFIX)) await rm(join(root, name), { recursive: true, force: true });

  const name = stepDirName(o.state.step);
  const tmp = join(root, `${TEMP_PREFIX}${name}-${process.pid}`);
  const final = join(root, name);
  await mkdir(tmp, { recursive: true });
  try {
    await (o.model.saveTrainable ? o.model.saveTrainable(tmp) : o.model.save(tmp));
    for (const f of o.copyFiles ?? []) await copyFile(f, join(tmp, basename(f)));
    const toStable = new Map([...o.model.namedVariables()].map(([stable, v]) => [v.name, stable]));
    const opt = renameKeys(await o.optimizer.exportState(), toStable, 'model variable');
    await writeSafetensors(join(tmp, OPTIMIZER_FILE), opt, {
      metadata: { format: 'sharp-rl adamw', layout: 'variable' },
    });
    await writeJsonAtomic(join(tmp, TRAINER_STATE_FILE), o.state);
    fsyncDir(tmp);
    if (existsSync(final)) {
      // Re-saving a step (e.g. after a resume): swap, so there is never a moment without a complete copy.
      const old = join(root, `${TEMP_PREFIX}old-${name}-${process.pid}`);
      await rename(final, old);
      await rename(tmp, final);
      await rm(old, { recursive: true, force: true });
    } else {
      await rename(tmp, final);
    }
    fsyncDir(root);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }

  const all = await listCheckpoints(runDir, folder);
  for (const c of all.slice(0, Math.max(0, all.length - o.keep))) await rm(c.dir, { recursive: true, force: true });
  return final;
}

/**
 * The model of a checkpoint folder: a whole model loads as it is; an adapter folder (a LoRA run's)
 * gets its adapters attached to `base()`, the model the run started from, wherever the folder has moved.
 */
export async function loadCheckpointModel(dir: string, base: () => Promise<CausalLM>): Promise<CausalLM> {
  if (!isAdapterDir(dir)) return CausalLM.load(dir);
  const model = await base();
  try {
    await model.loadAdapters(dir);
  } catch (err) {
    model.dispose();
    throw err;
  }
  return model;
}

/** Reads and validates a checkpoint's trainer_state.json. */
export async function readTrainerState(dir: string): Promise<TrainerState> {
  const file = join(dir, TRAINER_STATE_FILE);
  // A damaged checkpoint (disk full, a copy cut short, an edit) is bad input, not a bug: one line
  // naming the file and the way back to the checkpoint before it.
  const damaged = `this checkpoint is damaged; delete ${dir} to resume from the one before it`;
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new UserError(
      `${file}: cannot read trainer state (${String((err as Error).message).split('\n')[0]}): ${damaged}`,
    );
  }
  const r = trainerStateSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new UserError(`${file}: field '${issue?.path.join('.') ?? '?'}': ${issue?.message ?? 'invalid'}: ${damaged}`);
  }
  return r.data;
}

/**
 * Loads a checkpoint's optimizer state into `optimizer` for the given model (whose weights the
 * caller loads from the same folder, e.g. CausalLM.load(dir)).
 */
export async function loadOptimizerState(dir: string, model: CheckpointModel, optimizer: AdamW): Promise<void> {
  const file = join(dir, OPTIMIZER_FILE);
  const raw = await readSafetensors(file);
  const state = new Map<string, NamedArray>([...raw].map(([k, t]) => [k, { shape: t.shape, data: t.data }]));
  const toVar = new Map([...model.namedVariables()].map(([stable, v]) => [stable, v.name]));
  try {
    optimizer.importState(renameKeys(state, toVar, 'weight of this model'));
  } catch (err) {
    throw new Error(`${file}: ${String((err as Error).message).split('\n')[0]}`);
  }
}
