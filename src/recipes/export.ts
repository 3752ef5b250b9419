import { existsSync } from 'node:fs';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UserError } from '../errors.ts';
import { claimOutDir, publishOutDir } from '../fs/output-guard.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { ADAPTER_CONFIG, baseDirOf, isAdapterDir, readPeftConfig } from '../model/io/peft.ts';
import { COMPANION_FILES } from './stages/save-model.ts';
import type { ExportFlags } from './commands.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

/**
 * `sharp export`: a LoRA adapter folder (a checkpoint of a run with train.lora, `<run>/adapter/`,
 * or any PEFT LoRA folder for a Llama / Qwen2 / Qwen3 base) out as
 *   --merge   a Hugging Face checkpoint with the adapters merged into the weights
 *             (W + alpha / r * B A): config.json, model.safetensors, the tokenizer files;
 *   default   the adapters alone in PEFT's layout (adapter_config.json, adapter_model.safetensors,
 *             the tokenizer files), without the optimizer state and trainer state of a checkpoint.
 * The base model is the adapter_config.json's base_model_name_or_path unless --base names it.
 * The output folder is built under a temp name and moved into place. An existing --out must be an
 * earlier export (or --force), and only the files an export writes are replaced there
 * (src/fs/output-guard.ts); --out may not cover or lie inside --model or the base.
 * Flags: src/recipes/commands.ts.
 */
export interface ExportResult {
  out: string;
  merged: boolean;
  parameters: number;
  adapterParameters: number;
}

/** The files an export writes (a sharded merge adds its shards; publishOutDir checks those too). */
function exportNames(merge: boolean): string[] {
  return [
    ...COMPANION_FILES,
    ...(merge
      ? ['config.json', 'model.safetensors', 'model.safetensors.index.json']
      : [ADAPTER_CONFIG, 'adapter_model.safetensors']),
  ];
}

/** The export itself, on an initialised backend. */
export async function exportAdapters(o: {
  model: string;
  out: string;
  merge: boolean;
  base?: string;
  dtype?: 'F32' | 'BF16';
  force?: boolean;
}): Promise<ExportResult> {
  const from = resolve(o.model);
  if (!isAdapterDir(from)) {
    throw new UserError(
      existsSync(join(from, 'config.json'))
        ? `export: --model ${o.model} is a whole model (config.json), not LoRA adapters: there is nothing to merge`
        : `export: --model ${o.model}: no ${ADAPTER_CONFIG} there (expected a LoRA adapter folder)`,
    );
  }
  const peft = await readPeftConfig(from);
  const base = o.base !== undefined ? resolve(o.base) : baseDirOf(from, peft);
  if (!existsSync(join(base, 'config.json')))
    throw new UserError(`export: base model ${base}: no config.json there (pass --base DIR)`);
  const inputs = [
    { path: from, what: '--model' },
    { path: base, what: o.base !== undefined ? '--base' : 'the base model' },
  ];
  const { dir: out } = claimOutDir(o.out, {
    command: 'export',
    flag: 'export: --out',
    force: o.force,
    inputs,
    writes: exportNames(o.merge),
  });
  const tmp = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
  const model = await CausalLM.load(from, { base });
  try {
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    if (o.merge) await model.save(tmp, { dtype: o.dtype });
    else await model.saveAdapters(tmp, { base: peft.base !== '' && o.base === undefined ? peft.base : base });
    // Tokenizer and generation files: the adapter folder's (a checkpoint copies them), else the base's.
    for (const f of COMPANION_FILES) {
      const src = [join(from, f), join(base, f)].find((p) => existsSync(p));
      if (src) await copyFile(src, join(tmp, f));
    }
    publishOutDir(tmp, out, 'export');
    const adapterParameters = [...model.namedVariables().values()].reduce((a, v) => a + v.size, 0);
    return { out, merged: o.merge, parameters: model.numParameters(), adapterParameters };
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  } finally {
    model.dispose();
  }
}

export async function run(opts: ExportFlags): Promise<void> {
  const dtype = opts.dtype === 'bf16' ? 'BF16' : 'F32';
  // The checks that need no backend, before one starts: exportAdapters repeats them with the base.
  claimOutDir(opts.out, {
    command: 'export',
    flag: 'export: --out',
    force: opts.force,
    writes: exportNames(opts.merge === true),
    inputs: [
      { path: opts.model, what: '--model' },
      ...(opts.base !== undefined ? [{ path: opts.base, what: '--base' }] : []),
    ],
  });
  await withRun({ cfg: configFrom({}), backendFlag: opts.backend }, async () => {
    const r = await exportAdapters({
      model: opts.model,
      out: opts.out,
      merge: opts.merge === true,
      base: opts.base,
      dtype,
      force: opts.force,
    });
    const what = r.merged
      ? `a merged Hugging Face checkpoint (${r.parameters.toLocaleString('en-US')} parameters, ${dtype})`
      : `LoRA adapters in PEFT's layout (${r.adapterParameters.toLocaleString('en-US')} parameters)`;
    process.stdout.write(`export: wrote ${what} to ${r.out}\n`);
  });
}
