/**
 * Which checkpoint `sharp eval` runs: --model, else config
 * model.path; and on a fresh clone, where model.path is still the schema default and nothing has
 * been trained there, the shipped untrained model (models/tiny-random, built by
 * scripts/build-tiny-model.ts), so `npx sharp eval --bench musique --limit 20` runs with nothing but
 * the repository. A path the user named (flag or config) that holds no checkpoint is an error.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configSchema, type Config } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { ADAPTER_CONFIG } from '../../model/io/peft.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';

/** The shipped random-init model, relative to the repository root. */
export const SHIPPED_MODEL = 'models/tiny-random';

export interface ModelChoice {
  dir: string;
  /** Why this model was chosen when it is not the one the user named (printed once). */
  note?: string;
}

function missingFile(dir: string): string | null {
  for (const f of ['config.json', 'tokenizer.json']) if (!existsSync(join(dir, f))) return f;
  return null;
}

/** `cwd`: where relative paths (flag, model.path) resolve; the process's by default. */
export function resolveModelDir(
  flag: string | undefined,
  cfg: Config,
  repoRoot: string,
  cwd: string = process.cwd(),
): ModelChoice {
  if (flag !== undefined && flag !== '') {
    const dir = resolve(cwd, flag);
    const miss = missingFile(dir);
    if (miss) {
      const hint =
        miss === 'config.json' && existsSync(join(dir, ADAPTER_CONFIG))
          ? `; it holds LoRA adapters: merge them into a whole model first (sharp export --merge --model ${dir} ` +
            `--out DIR)`
          : '';
      throw new UserError(`--model ${dir}: no ${miss} there (expected a Hugging Face checkpoint folder)${hint}`);
    }
    return { dir };
  }
  const dir = resolve(cwd, cfg.model.path);
  const miss = missingFile(dir);
  if (!miss) return { dir };
  const schemaDefault = configSchema.parse({}).model.path;
  if (cfg.model.path === schemaDefault) {
    const shipped = join(repoRoot, SHIPPED_MODEL);
    if (!missingFile(shipped)) {
      return {
        dir: shipped,
        note:
          `model.path ${cfg.model.path} holds no checkpoint yet; using the shipped untrained model ` +
          `${SHIPPED_MODEL} (random init: expect scores near 0; pass --model DIR)`,
      };
    }
  }
  throw new UserError(
    `model.path ${dir}: no ${miss} there (expected a Hugging Face checkpoint folder; pass --model DIR)`,
  );
}

/** Loads model and tokenizer; a bad checkpoint becomes one line naming the folder. */
export async function loadModel(dir: string): Promise<{ model: CausalLM; tokenizer: Tokenizer }> {
  try {
    // Tokenizer first: it holds no tensors, so a bad tokenizer leaks no Variables.
    const tokenizer = await Tokenizer.load(dir);
    return { model: await CausalLM.load(dir), tokenizer };
  } catch (err) {
    throw new UserError(`--model ${dir}: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  }
}
