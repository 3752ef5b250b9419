import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configSchema } from '../src/config/schema.ts';
import { generateSynth } from '../src/data/synth/generate.ts';
import { LmPolicy } from '../src/rollout/lm-policy.ts';
import { CausalLM } from '../src/model/causal-lm.ts';
import { hfConfigFor } from '../src/model/config.ts';
import { Rng } from '../src/random/rng.ts';
import { fitBpeTokenizer, writeTokenizerFiles } from '../src/tokenizer/fit.ts';
import { Tokenizer } from '../src/tokenizer/tokenizer.ts';
import { PROTOCOLS } from '../src/rollout/protocol/index.ts';
import { roleSpecs } from '../src/rollout/protocol/tool-specs.ts';

/**
 * A tiny random-init LM behind the real LmPolicy, for the robustness test, the exact-replay test
 * with forced tokens, and the rollout benchmark ("a random-init tiny model (garbage
 * output)"). Its BPE tokenizer is fitted to the role prompts, protocol syntax and synthetic-world
 * text, so prompts have realistic token counts.
 */
export interface TinyLmOptions {
  seed: number;
  layers?: number;
  hidden?: number;
  vocab?: number;
  /** Folder to keep the tokenizer files in (e.g. to save a checkpoint there); a temp folder otherwise. */
  dir?: string;
}

export interface TinyLm {
  model: CausalLM;
  tokenizer: Tokenizer;
  policy(opts: { seed: number; maxContext: number; temperature?: number }): LmPolicy;
  dispose(): Promise<void>;
}

function corpus(): string[] {
  const rollout = configSchema.parse({}).rollout;
  const texts: string[] = [];
  for (const p of Object.values(PROTOCOLS)) {
    texts.push(
      p.systemPrompt(rollout.plannerPrompt, roleSpecs('planner')),
      p.systemPrompt(rollout.workerPrompt, roleSpecs('worker')),
    );
    texts.push(
      p.formatCall('search', 'Who founded Zorvex?'),
      p.formatAnswer('1950'),
      p.formatResult('[3] Zorvex: a company').content,
    );
  }
  for (const r of generateSynth({ seed: 99, n: 30 })) {
    texts.push(
      r.question,
      ...r.paragraphs.slice(0, 4).map((p) => `[${p.idx}] ${p.title}: ${p.paragraph_text}`),
      ...r.question_decomposition.map((h) => h.question),
    );
  }
  return texts;
}

export async function createTinyLm(opts: TinyLmOptions): Promise<TinyLm> {
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'sharp-tiny-lm-')));
  try {
    await writeTokenizerFiles(dir, fitBpeTokenizer(corpus(), opts.vocab ?? 512));
    const tokenizer = await Tokenizer.load(dir);
    const hidden = opts.hidden ?? 64;
    const model = CausalLM.random(
      hfConfigFor({
        arch: 'qwen3',
        layers: opts.layers ?? 2,
        hidden,
        heads: 4,
        kvHeads: 2,
        intermediate: hidden * 2,
        vocab: tokenizer.vocabSize,
        maxPositions: 4096,
      }),
      opts.seed,
    );
    return {
      model,
      tokenizer,
      policy: (p) =>
        new LmPolicy(model, tokenizer, {
          temperature: p.temperature ?? 1,
          topK: 0,
          topP: 1,
          maxContext: p.maxContext,
          rng: new Rng(p.seed),
        }),
      dispose: async () => model.dispose(),
    };
  } finally {
    if (opts.dir === undefined) await rm(dir, { recursive: true, force: true });
  }
}
