import { existsSync } from 'node:fs';
import { copyFile, mkdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { CausalLM } from '../../model/causal-lm.ts';

/**
 * Saves a trained model as a complete HF folder (weights, config, and the tokenizer and generation
 * files of the folder it came from, so it loads alone) atomically: written under a temp name, then
 * renamed over `dir` (a crash leaves the old folder or none).
 */
export const COMPANION_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja', 'generation_config.json'];

/** Companion files present in `fromDir` (absolute paths), e.g. for runGrpo's checkpointFiles. */
export function companionFiles(fromDir: string): string[] {
  return COMPANION_FILES.map((f) => join(resolve(fromDir), f)).filter((f) => existsSync(f));
}

export async function saveModelAtomic(model: CausalLM, dir: string, fromDir: string): Promise<string> {
  const final = resolve(dir);
  const tmp = join(dirname(final), `.${basename(final)}.tmp-${process.pid}`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  try {
    await model.save(tmp);
    for (const f of companionFiles(fromDir)) await copyFile(f, join(tmp, basename(f)));
    if (existsSync(final)) {
      const old = join(dirname(final), `.${basename(final)}.old-${process.pid}`);
      await rename(final, old);
      await rename(tmp, final);
      await rm(old, { recursive: true, force: true });
    } else {
      await rename(tmp, final);
    }
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  return final;
}
