/**
 * A model folder in the Hugging Face layout: config.json, weights
 * (model.safetensors or shards) and generation_config.json. The tokenizer files are src/tokenizer's.
 * Reading checks every tensor against the config, so a model is never built from a checkpoint that
 * does not fit it.
 */
import { mkdir } from 'node:fs/promises';
import { checkWeightShapes } from '../src/model/io/expected-shapes.ts';
import {
  parseHfConfig,
  readHfConfig,
  writeGenerationConfig,
  writeHfConfig,
  type HfModelConfig,
  type HfModelConfigInput,
} from '../src/model/io/hf-config.ts';
import { readWeights, writeWeights, type HostTensor, type WriteTensor } from '../src/model/io/safetensors.ts';

export interface Checkpoint {
  config: HfModelConfig;
  /** Exactly the tensors config.json implies (ignored extras such as rotary buffers removed). */
  weights: Map<string, HostTensor>;
}

/** Reads config.json and the weights of `dir`, and checks names and shapes against the config. */
export async function readCheckpoint(dir: string): Promise<Checkpoint> {
  const config = await readHfConfig(dir);
  const weights = await readWeights(dir);
  for (const name of checkWeightShapes(weights, config, dir)) weights.delete(name);
  return { config, weights };
}

export interface WriteCheckpointArgs {
  config: HfModelConfigInput;
  weights: ReadonlyMap<string, WriteTensor>;
  /** Written to generation_config.json when given. */
  generation?: { bos?: number; eos: number | number[]; pad?: number };
  /** dtype on disk (default F32). */
  dtype?: 'F32' | 'BF16';
  /** Shard above this many bytes per file (default: one file). */
  maxShardBytes?: number;
}

/**
 * Writes a loadable HF folder: weights first, then config.json and generation_config.json, each
 * file atomically. Shapes are checked against the config before anything is written.
 */
export async function writeCheckpoint(dir: string, args: WriteCheckpointArgs): Promise<void> {
  await mkdir(dir, { recursive: true });
  checkWeightShapes(args.weights, parseHfConfig(args.config, `${dir}/config.json`), dir);
  await writeWeights(dir, args.weights, { dtype: args.dtype, maxShardBytes: args.maxShardBytes });
  await writeHfConfig(dir, args.config);
  if (args.generation) await writeGenerationConfig(dir, args.generation);
}
