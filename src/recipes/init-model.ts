import { copyFile, mkdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { writeGenerationConfig } from '../model/io/hf-config.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { UserError } from '../errors.ts';
import { claimOutDir, publishOutDir } from '../fs/output-guard.ts';
import type { InitModelFlags } from './commands.ts';
import { checkInitSize } from './stages/model-size.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

/**
 * `sharp init-model`: writes a random-init model as a complete Hugging Face folder (config.json,
 * model.safetensors, generation_config.json, and the tokenizer files copied from --tokenizer), so
 * the quickstart has a checkpoint and Transformers can load it too. The folder is written under a
 * temp name and moved into place; an existing --out must be an earlier init-model output (or
 * --force), and only the files written here are replaced (src/fs/output-guard.ts).
 * Flags: src/recipes/commands.ts.
 */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja'];

function positive(v: number, flag: string): number {
  if (v <= 0) throw new UserError(`${flag} must be a positive integer (got ${v})`);
  return v;
}

export async function run(opts: InitModelFlags): Promise<void> {
  const { arch, seed } = opts;
  const layers = positive(opts.layers, '--layers');
  const hidden = positive(opts.hidden, '--hidden');
  const heads = positive(opts.heads, '--heads');
  const kvHeads = positive(opts.kvHeads, '--kv-heads');
  const intermediate = positive(opts.intermediate, '--intermediate');
  let vocab = positive(opts.vocab, '--vocab');
  if (hidden % heads !== 0) throw new UserError(`--hidden (${hidden}) must be a multiple of --heads (${heads})`);
  if (heads % kvHeads !== 0) throw new UserError(`--heads (${heads}) must be a multiple of --kv-heads (${kvHeads})`);
  if ((hidden / heads) % 2 !== 0) throw new UserError(`--hidden / --heads (${hidden / heads}) must be even for RoPE`);
  checkInitSize({ layers, hidden, heads, kvHeads, intermediate, vocab, tieEmbeddings: true }, 'init-model');

  let tok: Tokenizer | undefined;
  const tokDir = opts.tokenizer !== undefined ? resolve(opts.tokenizer) : undefined;
  const { dir: out } = claimOutDir(opts.out, {
    command: 'init-model',
    flag: 'init-model: --out',
    force: opts.force,
    inputs: tokDir !== undefined ? [{ path: tokDir, what: '--tokenizer' }] : [],
    writes: ['config.json', 'model.safetensors', 'generation_config.json', ...TOKENIZER_FILES],
  });
  if (tokDir) {
    if (!existsSync(join(tokDir, 'tokenizer.json')))
      throw new UserError(`--tokenizer ${tokDir}: no tokenizer.json there`);
    tok = await Tokenizer.load(tokDir);
    if (vocab < tok.vocabSize)
      throw new UserError(`--vocab ${vocab} is smaller than the tokenizer's ${tok.vocabSize} ids`);
    vocab = Math.max(vocab, tok.vocabSize);
  }

  await withRun({ cfg: configFrom({}), backendFlag: opts.backend }, async () => {
    const cfg = hfConfigFor({
      arch,
      layers,
      hidden,
      heads,
      kvHeads,
      intermediate,
      vocab,
      tieEmbeddings: true,
      bosTokenId: tok?.bosId,
      eosTokenId: tok?.eosIds[0],
    });
    const model = CausalLM.random(cfg, seed);
    const tmp = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
    try {
      await rm(tmp, { recursive: true, force: true });
      await mkdir(tmp);
      await model.save(tmp);
      if (tok && tokDir) {
        for (const f of TOKENIZER_FILES) if (existsSync(join(tokDir, f))) await copyFile(join(tokDir, f), join(tmp, f));
        await writeGenerationConfig(tmp, { bos: tok.bosId, eos: tok.eosIds, pad: tok.padId });
      } else {
        await writeGenerationConfig(tmp, { eos: [] });
      }
      publishOutDir(tmp, out, 'init-model');
      process.stdout.write(
        `wrote ${arch} model (${model.numParameters().toLocaleString('en-US')} parameters, vocab ${vocab}) to ` +
          `${out}${tok ? '' : ' (no tokenizer: pass --tokenizer DIR to make it usable for generation)'}\n`,
      );
    } finally {
      await rm(tmp, { recursive: true, force: true });
      model.dispose();
    }
  });
}
