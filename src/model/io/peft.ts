import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { writeJsonAtomic } from '../../fs/atomic.ts';
import { LORA_TARGETS, type LoraSettings, type LoraTarget } from '../lora.ts';
import { CheckpointError } from './errors.ts';
import { assertRegularFile } from './guards.ts';
import { readSafetensors, writeSafetensors, type HostTensor, type WriteTensor } from './safetensors.ts';

/**
 * LoRA adapters in Hugging Face PEFT's folder layout (what `PeftModel.save_pretrained` writes and
 * `PeftModel.from_pretrained` reads): adapter_config.json (peft_type LORA, r, lora_alpha,
 * lora_dropout, target_modules, base_model_name_or_path, task_type CAUSAL_LM, bias none, ...) and
 * adapter_model.safetensors with PEFT's tensor names
 * (`base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight`, lora.ts peftName).
 * Settings that would change the maths and are not implemented (DoRA, per-module rank or alpha
 * patterns, trained biases, extra saved modules, a layer subset, fan_in_fan_out) are refused in one
 * line rather than silently ignored.
 */
export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';

/** A folder holding adapters only (no config.json of its own): its base model is named in adapter_config.json. */
export function isAdapterDir(dir: string): boolean {
  return existsSync(join(dir, ADAPTER_CONFIG)) && !existsSync(join(dir, 'config.json'));
}

export interface PeftConfig {
  settings: LoraSettings;
  /** base_model_name_or_path as written. */
  base: string;
}

/** adapter_config.json as PEFT 0.13+ writes it for a LoRA on a causal LM. */
function peftConfigJson(settings: LoraSettings, base: string): Record<string, unknown> {
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: base,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    lora_alpha: settings.alpha,
    lora_dropout: settings.dropout,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    peft_type: 'LORA',
    r: settings.rank,
    rank_pattern: {},
    revision: null,
    target_modules: [...settings.targets],
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: settings.rslora === true,
  };
}

function emptyish(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'object' && Object.keys(v as object).length === 0);
}

/** Reads and checks adapter_config.json; one line naming the field at fault otherwise. */
export async function readPeftConfig(dir: string): Promise<PeftConfig> {
  const file = join(dir, ADAPTER_CONFIG);
  assertRegularFile(file);
  let raw: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    raw = parsed as Record<string, unknown>;
  } catch (err) {
    throw new CheckpointError(`${file}: not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
  const bad = (field: string, why: string): never => {
    throw new CheckpointError(`${file}: field '${field}' ${why}`);
  };
  if (raw.peft_type !== 'LORA')
    bad('peft_type', `is ${JSON.stringify(raw.peft_type)}; only LORA adapters are supported`);
  if (raw.task_type !== undefined && raw.task_type !== null && raw.task_type !== 'CAUSAL_LM')
    bad('task_type', `is ${JSON.stringify(raw.task_type)}; expected CAUSAL_LM`);
  const r = raw.r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 1)
    bad('r', `must be a positive integer, got ${JSON.stringify(r)}`);
  const alpha = raw.lora_alpha ?? 8;
  if (typeof alpha !== 'number' || !(alpha > 0))
    bad('lora_alpha', `must be a positive number, got ${JSON.stringify(alpha)}`);
  const dropout = raw.lora_dropout ?? 0;
  if (typeof dropout !== 'number' || !(dropout >= 0 && dropout < 1))
    bad('lora_dropout', `must be in [0, 1), got ${JSON.stringify(dropout)}`);
  const targets = raw.target_modules;
  if (!Array.isArray(targets) || targets.length === 0)
    bad(
      'target_modules',
      `must be a non-empty list of module names (${LORA_TARGETS.join(', ')}); got ${JSON.stringify(targets)}`,
    );
  for (const t of targets as unknown[]) {
    if (!LORA_TARGETS.includes(t as LoraTarget))
      bad('target_modules', `names '${String(t)}'; supported: ${LORA_TARGETS.join(', ')}`);
  }
  if ((raw.bias ?? 'none') !== 'none') bad('bias', `is ${JSON.stringify(raw.bias)}; only 'none' is supported`);
  if (raw.use_dora === true) bad('use_dora', 'is true; DoRA is not supported');
  if (raw.fan_in_fan_out === true) bad('fan_in_fan_out', 'is true; only nn.Linear layouts are supported');
  for (const f of ['rank_pattern', 'alpha_pattern', 'modules_to_save', 'layers_to_transform', 'layer_replication']) {
    if (!emptyish(raw[f]))
      bad(
        f,
        `is set (${JSON.stringify(raw[f])}); only one rank and alpha for every target module of every layer is ` +
          `supported`,
      );
  }
  const base = raw.base_model_name_or_path;
  if (base !== undefined && base !== null && typeof base !== 'string')
    bad('base_model_name_or_path', 'must be a string');
  return {
    settings: {
      rank: r as number,
      alpha: alpha as number,
      dropout: dropout as number,
      targets: [...new Set(targets as LoraTarget[])],
      rslora: raw.use_rslora === true,
    },
    base: typeof base === 'string' ? base : '',
  };
}

/** The base model folder an adapter folder names, resolved against the adapter folder when relative. */
export function baseDirOf(dir: string, cfg: PeftConfig): string {
  if (cfg.base === '')
    throw new CheckpointError(
      `${join(dir, ADAPTER_CONFIG)}: field 'base_model_name_or_path' is empty; pass the base model folder explicitly`,
    );
  return isAbsolute(cfg.base) ? cfg.base : resolve(dir, cfg.base);
}

/** Writes adapter_config.json and adapter_model.safetensors (F32) into dir. */
export async function writePeftAdapters(
  dir: string,
  settings: LoraSettings,
  base: string,
  tensors: ReadonlyMap<string, WriteTensor>,
): Promise<void> {
  await writeSafetensors(join(dir, ADAPTER_WEIGHTS), tensors, { metadata: { format: 'pt' } });
  await writeJsonAtomic(join(dir, ADAPTER_CONFIG), peftConfigJson(settings, base));
}

/** Reads adapter_model.safetensors as float32 (PEFT names, HF layout). */
export async function readPeftTensors(dir: string): Promise<Map<string, HostTensor>> {
  const file = join(dir, ADAPTER_WEIGHTS);
  if (!existsSync(file)) throw new CheckpointError(`${dir}: ${ADAPTER_CONFIG} without ${ADAPTER_WEIGHTS}`);
  return readSafetensors(file);
}
