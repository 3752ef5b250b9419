/**
 * Builds models/tiny-random: the untrained model that `sharp eval` falls back to on a fresh clone
 * (`npx sharp eval --bench musique --limit 20` must run with nothing but the
 * repository). Reproducible: the tokenizer is a byte-level BPE fitted to the shipped benchmark
 * samples plus the default role prompts (deterministic merges), the weights are N(0, 0.02) from
 * the seeded Rng. Run: `npx tsx scripts/build-tiny-model.ts [outDir]`; rerunning gives the same
 * bytes (checked by scripts/build-tiny-model.test.ts).
 *
 * Why a shipped file and not a model built at eval time: fitting and initialising takes seconds and
 * writes into the repository, and the quickstart's own folder (model.path,
 * checkpoints/quickstart-init) must stay for `sharp train`, whose tokenizer is fitted to another
 * corpus. The model is ~0.4 MB (2 layers, d=64, vocab 1024); its answers are noise, which is the
 * point: it checks the pipeline and the official file format, not accuracy.
 */
import { mkdir, rm, rename } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { initBackend } from '../src/backend/select.ts';
import { configSchema } from '../src/config/schema.ts';
import { BENCHMARKS } from '../src/eval/benchmarks.ts';
import { CausalLM } from '../src/model/causal-lm.ts';
import { hfConfigFor } from '../src/model/config.ts';
import { writeGenerationConfig } from '../src/model/io/hf-config.ts';
import { PROTOCOLS } from '../src/rollout/protocol/index.ts';
import { roleSpecs } from '../src/rollout/protocol/tool-specs.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../src/tokenizer/fit.ts';
import { Tokenizer } from '../src/tokenizer/tokenizer.ts';

const repo = resolve(import.meta.dirname, '..');
export const TINY_MODEL_DIR = 'models/tiny-random';
const VOCAB = 1024;
const SEED = 0;

/**
 * Every text the eval will render: samples (questions, paragraphs, answers) and both roles' prompts in both protocols.
 */
function corpus(): string[] {
  const texts: string[] = [];
  for (const [name, b] of Object.entries(BENCHMARKS)) {
    // The user-format sample came after the shipped model and is the synthetic world's text, which the
    // benchmark samples already cover: the model stays what it was, byte for byte.
    if (name === 'jsonl') continue;
    for (const ep of b.read(join(repo, b.sample))) {
      texts.push(ep.question, ...ep.answers);
      for (const p of ep.paragraphs) texts.push(`${p.title}: ${p.text}`);
      for (const d of ep.decomposition ?? []) texts.push(d.question, d.answer);
    }
  }
  const r = configSchema.parse({}).rollout;
  for (const p of Object.values(PROTOCOLS)) {
    texts.push(
      p.systemPrompt(r.plannerPrompt, roleSpecs('planner')),
      p.systemPrompt(r.workerPrompt, roleSpecs('worker')),
    );
  }
  return texts;
}

export async function buildTinyModel(outDir: string): Promise<void> {
  await initBackend('wasm');
  const tmp = `${outDir}.tmp`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await writeTokenizerFiles(tmp, fitBpeTokenizer(corpus(), VOCAB), { maxLength: 2048 });
  const tok = await Tokenizer.load(tmp);
  const cfg = hfConfigFor({
    arch: 'llama',
    layers: 2,
    hidden: 64,
    heads: 4,
    kvHeads: 2,
    intermediate: 172,
    vocab: VOCAB,
    maxPositions: 2048,
    tieEmbeddings: true,
    eosTokenId: tok.eosIds[0],
  });
  const model = CausalLM.random(cfg, SEED);
  try {
    await model.save(tmp);
  } finally {
    model.dispose();
  }
  await writeGenerationConfig(tmp, { eos: tok.eosIds, pad: tok.padId });
  // Swap the whole folder in at once, so a half-built model is never left at outDir.
  if (existsSync(outDir)) await rm(outDir, { recursive: true });
  await rename(tmp, outDir);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const out = resolve(process.argv[2] ?? join(repo, TINY_MODEL_DIR));
  await buildTinyModel(out);
  process.stdout.write(`wrote ${out}\n`);
}
