import { existsSync } from 'node:fs';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { claimOutDir, publishOutDir } from '../../fs/output-guard.ts';
import type { CausalLM } from '../../model/causal-lm.ts';

/**
 * Saves a trained model as a complete HF folder (weights, config, and the tokenizer and generation
 * files of the folder it came from, so it loads alone) atomically: written under a temp name, then
 * moved into `dir` (a crash leaves the old files or none). `dir` must be new or an earlier save of
 * `command`, and apart from `fromDir`; only the files saved are replaced (src/fs/output-guard.ts).
 */
export const COMPANION_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'generation_config.json',
];

/** Companion files present in `fromDir` (absolute paths), e.g. for runGrpo's checkpointFiles. */
export function companionFiles(fromDir: string): string[] {
  return COMPANION_FILES.map((f) => join(resolve(fromDir), f)).filter((f) => existsSync(f));
}

/** The checks of saveModelAtomic, made before any training (one line, exit 2): returns the absolute folder. */
export function checkModelOut(dir: string, fromDir: string, command = 'sft'): string {
  return claimOutDir(dir, {
    command,
    flag: `${command}: model output`,
    inputs: [{ path: fromDir, what: 'model.path' }],
    forceable: false,
  }).dir;
}

export async function saveModelAtomic(model: CausalLM, dir: string, fromDir: string, command = 'sft'): Promise<string> {
  const final = checkModelOut(dir, fromDir, command);
  const tmp = join(dirname(final), `.${basename(final)}.tmp-${process.pid}`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  try {
    await model.save(tmp);
    for (const f of companionFiles(fromDir)) await copyFile(f, join(tmp, basename(f)));
    publishOutDir(tmp, final, command);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  return final;
}
