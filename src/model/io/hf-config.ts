import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeJsonAtomic } from '../../fs/atomic.ts';
import { CheckpointError } from './errors.ts';
import { assertRegularFile } from './guards.ts';
import { configKeyProblem } from './config-keys.ts';
import { RopeConfigError, ropeConfigOf } from '../rope/from-config.ts';

/**
 * Hugging Face `config.json` for the decoder families we run. Keys outside the
 * schema are kept and written back unchanged, but only those that cannot change the maths are
 * accepted (config-keys.ts); RoPE is read in the 4.x or 5.x spelling (rope/from-config.ts) and
 * written back in the one it came in. Defaults follow Transformers' LlamaConfig / Qwen2Config /
 * Qwen3Config where the key is absent.
 */

const positiveInt = z.number().int().positive();
const tokenId = z.number().int().nonnegative();

const hfConfigSchema = z
  .looseObject({
    model_type: z
      .enum(['llama', 'qwen2', 'qwen3'])
      .describe('Decoder family: qwen2 adds q/k/v bias, qwen3 adds per-head q/k RMSNorm.'),
    vocab_size: positiveInt.describe('Rows of the embedding and LM head.'),
    hidden_size: positiveInt.describe('Residual stream width D.'),
    intermediate_size: positiveInt.describe('SwiGLU inner width.'),
    num_hidden_layers: positiveInt.describe('Decoder blocks.'),
    num_attention_heads: positiveInt.describe('Query heads H.'),
    num_key_value_heads: positiveInt.optional().describe('Key/value heads (GQA); default H.'),
    head_dim: positiveInt
      .nullish()
      .describe('Per-head width; default hidden_size / num_attention_heads (Qwen3 sets it explicitly).'),
    rope_theta: z
      .number()
      .positive()
      .optional()
      .describe('RoPE base frequency (Transformers 4.x spelling; default 10000).'),
    rope_scaling: z
      .unknown()
      .optional()
      .describe('RoPE scaling of Transformers 4.x: null, or {rope_type: linear | llama3 | yarn, ...}.'),
    rope_parameters: z
      .unknown()
      .optional()
      .describe(
        'RoPE settings of Transformers 5.x: {rope_type, rope_theta, ...}, or one such dict per attention type.',
      ),
    rms_norm_eps: z.number().positive().default(1e-6).describe('RMSNorm epsilon.'),
    tie_word_embeddings: z.boolean().default(false).describe('LM head shares the embedding matrix.'),
    max_position_embeddings: positiveInt.default(2048).describe('Longest context the model was trained for.'),
    bos_token_id: tokenId.nullish().describe('Beginning-of-sequence id, if the model uses one.'),
    eos_token_id: z
      .union([tokenId, z.array(tokenId)])
      .nullish()
      .describe('End-of-sequence id(s).'),
    attention_bias: z
      .boolean()
      .optional()
      .describe('Bias on attention projections; default true for qwen2 (q/k/v), false otherwise.'),
    mlp_bias: z.boolean().optional().describe('Bias on the MLP projections (llama only).'),
  })
  .superRefine((c, ctx) => {
    const kv = c.num_key_value_heads ?? c.num_attention_heads;
    if (c.num_attention_heads % kv !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['num_key_value_heads'],
        message: `${kv} does not divide num_attention_heads ${c.num_attention_heads}`,
      });
    }
    if (c.head_dim == null && c.hidden_size % c.num_attention_heads !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['head_dim'],
        message:
          `absent and hidden_size ${c.hidden_size} is not a multiple of num_attention_heads ` +
          `${c.num_attention_heads}`,
      });
    }
  })
  .transform((c) => ({
    ...c,
    num_key_value_heads: c.num_key_value_heads ?? c.num_attention_heads,
    head_dim: c.head_dim ?? c.hidden_size / c.num_attention_heads,
    // Qwen2 always has q/k/v bias (Qwen2Attention hard-codes bias=True); Llama and Qwen3 read attention_bias.
    attention_bias: c.attention_bias ?? c.model_type === 'qwen2',
    bos_token_id: c.bos_token_id ?? undefined,
    eos_token_id: c.eos_token_id ?? undefined,
  }));

/** A parsed config.json with every default filled in (extra HF keys kept as `unknown`). */
export type HfModelConfig = z.output<typeof hfConfigSchema> & { [key: string]: unknown };
/** What a caller may pass to build a config: defaulted keys optional. */
export type HfModelConfigInput = z.input<typeof hfConfigSchema>;

const CONFIG_FILE = 'config.json';
const GENERATION_CONFIG_FILE = 'generation_config.json';

const ARCHITECTURES: Record<HfModelConfig['model_type'], string> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
};

/** Formats the first zod issue as "field 'a.b': message" (one line). */
function firstIssue(err: z.ZodError): string {
  const issue = err.issues[0];
  const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  return `field '${path}': ${issue.message}`;
}

/** Validates a config object; `source` names the file in errors. */
export function parseHfConfig(raw: unknown, source = CONFIG_FILE): HfModelConfig {
  const res = hfConfigSchema.safeParse(raw);
  if (!res.success) throw new CheckpointError(`${source}: ${firstIssue(res.error)}`);
  const cfg = res.data as HfModelConfig;
  const problem = configKeyProblem(cfg);
  if (problem) throw new CheckpointError(`${source}: field '${problem.key}': ${problem.message}`);
  try {
    ropeConfigOf(cfg, cfg.max_position_embeddings);
  } catch (err) {
    if (err instanceof RopeConfigError) throw new CheckpointError(`${source}: field '${err.key}': ${err.message}`);
    throw err;
  }
  return cfg;
}

async function readJson(file: string): Promise<unknown> {
  assertRegularFile(file);
  const text = await readFile(file, 'utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CheckpointError(`${file}: not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
}

/** Reads and validates `dir/config.json`. */
export async function readHfConfig(dir: string): Promise<HfModelConfig> {
  const file = join(dir, CONFIG_FILE);
  return parseHfConfig(await readJson(file), file);
}

/**
 * Writes `dir/config.json` atomically, after validating it. Adds `architectures`, `hidden_act` and
 * `torch_dtype` (unless a 5.x `dtype` is there) when absent so Transformers' AutoModelForCausalLM
 * loads the folder as is.
 */
export async function writeHfConfig(dir: string, cfg: HfModelConfigInput): Promise<void> {
  const file = join(dir, CONFIG_FILE);
  const parsed = parseHfConfig(cfg, file);
  // Transformers 5 names the dtype `dtype`; adding `torch_dtype` beside it would mix the two spellings.
  const dtype = parsed.dtype !== undefined && parsed.torch_dtype === undefined ? {} : { torch_dtype: 'float32' };
  const out: Record<string, unknown> = {
    architectures: [ARCHITECTURES[parsed.model_type]],
    hidden_act: 'silu',
    ...dtype,
    ...parsed,
  };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  await writeJsonAtomic(file, out);
}

export interface GenerationIds {
  bos?: number;
  /** End-of-sequence ids: generation stops at any of them. */
  eos: number[];
  pad?: number;
}

/** Writes `dir/generation_config.json` atomically (bos_token_id, eos_token_id, pad_token_id). */
export async function writeGenerationConfig(
  dir: string,
  ids: { bos?: number; eos: number | number[]; pad?: number },
): Promise<void> {
  const eos = Array.isArray(ids.eos) ? ids.eos : [ids.eos];
  const out: Record<string, unknown> = {};
  if (ids.bos !== undefined) out.bos_token_id = ids.bos;
  out.eos_token_id = eos.length === 1 ? eos[0] : eos;
  if (ids.pad !== undefined) out.pad_token_id = ids.pad;
  await writeJsonAtomic(join(dir, GENERATION_CONFIG_FILE), out);
}

const generationSchema = z.looseObject({
  bos_token_id: tokenId.nullish(),
  eos_token_id: z.union([tokenId, z.array(tokenId)]).nullish(),
  pad_token_id: tokenId.nullish(),
});

/** Reads `dir/generation_config.json` if present (undefined when absent). */
export async function readGenerationConfig(dir: string): Promise<GenerationIds | undefined> {
  const file = join(dir, GENERATION_CONFIG_FILE);
  if (!existsSync(file)) return undefined;
  const res = generationSchema.safeParse(await readJson(file));
  if (!res.success) throw new CheckpointError(`${file}: ${firstIssue(res.error)}`);
  const g = res.data;
  const eos = g.eos_token_id == null ? [] : Array.isArray(g.eos_token_id) ? g.eos_token_id : [g.eos_token_id];
  return { bos: g.bos_token_id ?? undefined, eos, pad: g.pad_token_id ?? undefined };
}
