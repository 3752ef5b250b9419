import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Template } from '@huggingface/jinja';
import type { Config } from '../../config/schema.ts';
import type { Episode } from '../../data/episode.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { hfConfigFor } from '../../model/config.ts';
import { writeGenerationConfig } from '../../model/io/hf-config.ts';
import type { Transcript } from '../../rollout/transcripts.ts';
import { CHATML_TEMPLATE, fitBpe, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { UserError } from '../../errors.ts';
import { publishDir } from '../../fs/publish-dir.ts';
import { checkInitSize } from './model-size.ts';

/**
 * The quickstart's model: when model.init.enabled and model.path has no
 * config.json, fit a byte-level BPE to the synthetic corpus (paragraphs, questions, and the expert
 * transcripts rendered through the chat template, so protocol tags and ChatML framing get their own
 * merges) and write a random-init model there in the HF layout with the tokenizer files.
 * The folder is built under a temp name and renamed into place: a crash never leaves half a model.
 */
export interface InitResult {
  dir: string;
  created: boolean;
  parameters?: number;
  vocab?: number;
  corpusTokens?: number;
}

/** The texts the tokenizer is fitted to. */
export function tokenizerCorpus(episodes: readonly Episode[], transcripts: readonly Transcript[]): string[] {
  const template = new Template(CHATML_TEMPLATE);
  const texts: string[] = [];
  for (const e of episodes) {
    texts.push(e.question, ...e.paragraphs.map((p) => `${p.title}: ${p.text}`));
  }
  for (const t of transcripts)
    texts.push(
      template.render({
        messages: t.messages.map((m) => ({ role: m.role, content: m.content })),
        add_generation_prompt: false,
      }),
    );
  return texts;
}

export async function ensureModel(model: Config['model'], seed: number, corpus: () => string[]): Promise<InitResult> {
  const dir = resolve(model.path);
  if (existsSync(join(dir, 'config.json'))) return { dir, created: false };
  if (!model.init.enabled)
    throw new UserError(
      `model.path '${model.path}' has no config.json (set model.init.enabled to create a random-init model there)`,
    );
  const i = model.init;
  if (i.hidden % i.heads !== 0)
    throw new UserError(`model.init.hidden (${i.hidden}) must be a multiple of model.init.heads (${i.heads})`);
  if (i.heads % i.kvHeads !== 0)
    throw new UserError(`model.init.heads (${i.heads}) must be a multiple of model.init.kvHeads (${i.kvHeads})`);
  if ((i.hidden / i.heads) % 2 !== 0)
    throw new UserError(`model.init.hidden / heads (${i.hidden / i.heads}) must be even for RoPE`);
  checkInitSize(i, 'model.init');

  const { tokenizerJson, corpusTokens } = fitBpe(corpus(), i.vocab);
  const tmp = `${dir}.tmp-${process.pid}-${randomUUID()}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  await writeTokenizerFiles(tmp, tokenizerJson, { maxLength: i.maxPositions });
  const tok = await Tokenizer.load(tmp);
  const hf = hfConfigFor({
    arch: i.arch,
    layers: i.layers,
    hidden: i.hidden,
    heads: i.heads,
    kvHeads: i.kvHeads,
    intermediate: i.intermediate,
    vocab: tok.vocabSize,
    maxPositions: i.maxPositions,
    tieEmbeddings: i.tieEmbeddings,
    bosTokenId: tok.bosId,
    eosTokenId: tok.eosIds[0],
  });
  const lm = CausalLM.random(hf, seed);
  try {
    await lm.save(tmp);
    await writeGenerationConfig(tmp, { bos: tok.bosId, eos: tok.eosIds, pad: tok.padId });
    // Another fresh run may have created the same model.path meanwhile: its complete model wins.
    if (
      (await publishDir(
        tmp,
        dir,
        (d) => existsSync(join(d, 'config.json')) && existsSync(join(d, 'model.safetensors')),
      )) === 'existing'
    )
      return { dir, created: false };
    return { dir, created: true, parameters: lm.numParameters(), vocab: tok.vocabSize, corpusTokens };
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  } finally {
    lm.dispose();
  }
}
