import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  parseHfConfig,
  readGenerationConfig,
  readHfConfig,
  writeGenerationConfig,
  writeHfConfig,
  type HfModelConfigInput,
} from './hf-config.ts';
import { errorOf } from '../../../test/one-line-error.ts';

const REAL = resolve(import.meta.dirname, '../../../../shared/models/tinystories-260k');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-cfg-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const base: HfModelConfigInput = {
  model_type: 'llama',
  vocab_size: 2000,
  hidden_size: 128,
  intermediate_size: 344,
  num_hidden_layers: 2,
  num_attention_heads: 4,
};

describe('parseHfConfig defaults', () => {
  it('fills HF defaults for llama', () => {
    const c = parseHfConfig(base);
    expect(c.num_key_value_heads).toBe(4); // = heads
    expect(c.head_dim).toBe(32); // 128 / 4
    // not filled in: the file keeps its RoPE spelling (the decoder defaults to 10000)
    expect(c.rope_theta).toBeUndefined();
    expect(c.rms_norm_eps).toBe(1e-6);
    expect(c.tie_word_embeddings).toBe(false);
    expect(c.attention_bias).toBe(false);
    expect(c.max_position_embeddings).toBe(2048);
    expect(c.bos_token_id).toBeUndefined();
  });

  it('gives qwen2 q/k/v bias and keeps explicit qwen3 head_dim and unknown keys', () => {
    expect(parseHfConfig({ ...base, model_type: 'qwen2' }).attention_bias).toBe(true);
    const q3 = parseHfConfig({
      ...base,
      model_type: 'qwen3',
      head_dim: 64,
      num_key_value_heads: 2,
      attention_bias: false,
      eos_token_id: [5, 6],
      use_cache: true,
    });
    expect(q3.head_dim).toBe(64);
    expect(q3.attention_bias).toBe(false);
    expect(q3.eos_token_id).toEqual([5, 6]);
    expect(q3.use_cache).toBe(true); // loose: extra HF keys survive
    // Qwen's window is off unless use_sliding_window is true (Qwen2.5 configs carry sliding_window: 131072).
    expect(
      parseHfConfig({ ...base, model_type: 'qwen2', sliding_window: 131072, max_window_layers: 21 }).sliding_window,
    ).toBe(131072);
  });
});

describe('readHfConfig / writeHfConfig', () => {
  it('round-trips and adds what Transformers needs', async () => {
    const d = join(dir, 'rt');
    await mkdir(d);
    await writeHfConfig(d, {
      ...base,
      model_type: 'qwen3',
      num_key_value_heads: 2,
      tie_word_embeddings: true,
      bos_token_id: 0,
      eos_token_id: 2,
      initializer_range: 0.02,
    });
    const raw = JSON.parse(await readFile(join(d, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(raw.architectures).toEqual(['Qwen3ForCausalLM']);
    expect(raw.hidden_act).toBe('silu');
    expect(raw.head_dim).toBe(32);
    expect(raw.initializer_range).toBe(0.02);
    const back = await readHfConfig(d);
    expect(back.num_key_value_heads).toBe(2);
    expect(back.tie_word_embeddings).toBe(true);
    expect(back.eos_token_id).toBe(2);
  });

  it('names the file and the field on bad input', async () => {
    const d = join(dir, 'bad');
    await mkdir(d);
    expect(await errorOf(readHfConfig(d))).toMatch(/bad\/config\.json: missing/);
    await writeFile(join(d, 'config.json'), '{"model_type": "llama",');
    expect(await errorOf(readHfConfig(d))).toMatch(/bad\/config\.json: not valid JSON/);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...base, hidden_size: '128' }, /config\.json: field 'hidden_size': .*expected number/],
      [{ ...base, model_type: 'gpt2' }, /config\.json: field 'model_type': .*"llama"/],
      [{ ...base, vocab_size: undefined }, /config\.json: field 'vocab_size'/],
      [
        { ...base, num_key_value_heads: 3 },
        /config\.json: field 'num_key_value_heads': 3 does not divide num_attention_heads 4/,
      ],
      [
        { ...base, num_attention_heads: 3 },
        /config\.json: field 'head_dim': absent and hidden_size 128 is not a multiple of num_attention_heads 3/,
      ],
      [
        { ...base, rope_scaling: { rope_type: 'llama3' } },
        /config\.json: field 'rope_scaling': 'low_freq_factor' must be a positive number \(got undefined\)$/,
      ],
      [
        { ...base, rope_scaling: { rope_type: 'dynamic', factor: 2 } },
        /config\.json: field 'rope_scaling': rope_type 'dynamic' \(dynamic NTK\) is not supported: its frequencies change with the sequence length$/,
      ],
      [
        { ...base, rope_parameters: { rope_type: 'yarn', rope_theta: 1e6, factor: 4, extrapolation: 2 } },
        /config\.json: field 'rope_parameters': key 'extrapolation' is not read by rope_type 'yarn'/,
      ],
      [
        { ...base, rope_parameters: { rope_type: 'default', rope_theta: 1e6 }, rope_theta: 10000 },
        /config\.json: field 'rope_theta': rope_theta\/rope_scaling .* contradict rope_parameters/,
      ],
      [
        { ...base, model_type: 'qwen2', use_sliding_window: true, sliding_window: 4096 },
        /config\.json: field 'use_sliding_window': true: sliding-window attention is not supported/,
      ],
      [
        { ...base, sliding_window: 4096 },
        /config\.json: field 'sliding_window': 4096: sliding-window attention is not supported \(must be null\)$/,
      ],
      [{ ...base, hidden_act: 'gelu' }, /config\.json: field 'hidden_act': 'gelu' is not supported \(only silu\)$/],
      [
        { ...base, num_hidden_layers: 2, layer_types: ['full_attention', 'sliding_attention'] },
        /config\.json: field 'layer_types': layer 1 is 'sliding_attention': only full_attention is supported$/,
      ],
      [
        { ...base, model_type: 'qwen3', mlp_bias: true },
        /config\.json: field 'mlp_bias': true is not supported for qwen3/,
      ],
      [{ ...base, partial_rotary_factor: 0.5 }, /config\.json: field 'partial_rotary_factor': 0\.5 is not supported/],
      [
        { ...base, quantization_config: { quant_method: 'gptq' } },
        /config\.json: field 'quantization_config': quantized checkpoints are not supported/,
      ],
      [
        { ...base, logit_softcapping: 30 },
        /config\.json: field 'logit_softcapping': unknown config\.json key: it may change the model's maths, so it is refused/,
      ],
      [{ ...base, eos_token_id: 'x' }, /config\.json: field 'eos_token_id'/],
    ];
    for (const [cfg, want] of cases) {
      await writeFile(join(d, 'config.json'), JSON.stringify(cfg));
      expect(await errorOf(readHfConfig(d))).toMatch(want);
    }
  });
});

describe('generation_config.json', () => {
  it('writes and reads bos / eos / pad', async () => {
    const d = join(dir, 'gen');
    await mkdir(d);
    expect(await readGenerationConfig(d)).toBeUndefined();
    await writeGenerationConfig(d, { bos: 1, eos: [2, 7], pad: 0 });
    expect(JSON.parse(await readFile(join(d, 'generation_config.json'), 'utf8'))).toEqual({
      bos_token_id: 1,
      eos_token_id: [2, 7],
      pad_token_id: 0,
    });
    expect(await readGenerationConfig(d)).toEqual({ bos: 1, eos: [2, 7], pad: 0 });
    await writeGenerationConfig(d, { eos: 3 });
    expect(await readGenerationConfig(d)).toEqual({ bos: undefined, eos: [3], pad: undefined });
  });
});

describe('real checkpoint config', () => {
  it.skipIf(!existsSync(join(REAL, 'config.json')))('reads tinystories-260k', async () => {
    const c = await readHfConfig(REAL);
    expect(c.model_type).toBe('llama');
    expect([
      c.vocab_size,
      c.hidden_size,
      c.num_hidden_layers,
      c.num_attention_heads,
      c.num_key_value_heads,
      c.head_dim,
    ]).toEqual([512, 64, 5, 8, 4, 8]);
    expect(c.rms_norm_eps).toBe(1e-5);
    expect(c.tie_word_embeddings).toBe(true);
    expect(await readGenerationConfig(REAL)).toEqual({ bos: 1, eos: [2], pad: undefined });
  });
});

describe('config.json round trip keeps the RoPE spelling it was read in', () => {
  const v4 = { ...base, model_type: 'qwen3', rope_theta: 1e6, rope_scaling: null, transformers_version: '4.51.0' };
  const v5 = {
    ...base,
    model_type: 'qwen3',
    rope_parameters: { rope_theta: 1e6, rope_type: 'default' },
    transformers_version: '5.0.0',
    dtype: 'bfloat16',
  };
  for (const [label, cfg] of [
    ['4.x rope_theta', v4],
    ['5.x rope_parameters', v5],
  ] as const) {
    it(label, async () => {
      const d = join(dir, `rope-${cfg.transformers_version}`);
      await mkdir(d, { recursive: true });
      await writeFile(join(d, 'config.json'), JSON.stringify(cfg));
      const read = await readHfConfig(d);
      const out = join(d, 'out');
      await mkdir(out);
      await writeHfConfig(out, read);
      const raw = JSON.parse(await readFile(join(out, 'config.json'), 'utf8')) as Record<string, unknown>;
      for (const [k, v] of Object.entries(cfg)) expect(raw[k]).toEqual(v);
      if ('rope_parameters' in cfg) {
        expect(raw).not.toHaveProperty('torch_dtype'); // 5.x spells it dtype
        expect(raw).not.toHaveProperty('rope_theta');
        expect(raw).not.toHaveProperty('rope_scaling');
      } else expect(raw).not.toHaveProperty('rope_parameters');
    });
  }
});
