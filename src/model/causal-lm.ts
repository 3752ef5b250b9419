import * as tf from '@tensorflow/tfjs';
import { mkdir } from 'node:fs/promises';
import { Rng } from '../random/rng.ts';
import { modelConfigFromHf, type ModelConfig } from './config.ts';
import { decoderHidden, lmHead, positionsFromMask } from './decoder.ts';
import type { LayerKv } from './attention.ts';
import { tidyObject } from './tidy.ts';
import { INFER_OPS } from './ops/op-set.ts';
import { normalArray } from './init.ts';
import { CheckpointError } from './io/errors.ts';
import { readHfConfig, writeHfConfig, type HfModelConfig } from './io/hf-config.ts';
import { readWeights, writeWeights, type HostTensor, type WriteTensor } from './io/safetensors.ts';
import { EMBED, LM_HEAD, isIgnorableTensor, storedShape, transposeMatrix, weightSpecs, type WeightSpec } from './weight-map.ts';
import { assertFiniteTensors } from './io/guards.ts';

/** Distinguishes the Variables of several models in one process (policy, reference): tfjs names are global. */
let instanceCounter = 0;

/** Output of a cached forward: logits and the keys/values of every token seen so far. */
export interface CachedForward {
  logits: tf.Tensor2D; // [B*T', V]: T' = 1 with lastOnly, else T
  kv: LayerKv[]; // per layer, past ++ new
}

/**
 * A decoder-only causal LM (Llama / Qwen2 / Qwen3) whose weights are tfjs Variables keyed by their
 * exact HF names. Owns its Variables: call dispose().
 */
export class CausalLM {
  readonly config: ModelConfig;
  /** The config.json this model was built from (written back by save()). */
  readonly hfConfig: HfModelConfig;
  private readonly weights: Map<string, tf.Variable>;
  private readonly specs: WeightSpec[];
  private disposed = false;

  /** values(spec) gives each tensor in HF layout. */
  private constructor(hfConfig: HfModelConfig, values: (spec: WeightSpec) => Float32Array) {
    this.hfConfig = hfConfig;
    this.config = modelConfigFromHf(hfConfig);
    this.specs = weightSpecs(this.config);
    this.weights = new Map();
    const id = instanceCounter++;
    try {
      for (const s of this.specs) {
        const hfData = values(s); // HF layout
        // Linear weights: HF [out, in] -> stored [in, out], once per load (see weight-map.ts).
        const data = s.kind === 'linear' ? transposeMatrix(hfData, s.hfShape[0] as number, s.hfShape[1] as number) : hfData;
        this.weights.set(s.name, tf.tidy(() => tf.variable(tf.tensor(data, storedShape(s), 'float32'), true, `lm${id}/${s.name}`)));
      }
    } catch (err) {
      for (const v of this.weights.values()) v.dispose();
      throw err;
    }
  }

  /** A random-init model: Linear/Embedding N(0, 0.02) from the seeded Rng, norms 1, biases 0. */
  static random(hfConfig: HfModelConfig, seed: number): CausalLM {
    const rng = new Rng(seed);
    return new CausalLM(hfConfig, (s) => {
      const n = s.hfShape.reduce((a, b) => a * b, 1);
      if (s.init === 'normal') return normalArray(n, 0.02, rng); // drawn in HF layout, so a seed gives the same HF tensors
      return new Float32Array(n).fill(s.init === 'ones' ? 1 : 0);
    });
  }

  /** Loads config.json + safetensors weights from an HF-layout folder; one-line error per bad tensor. */
  static async load(dir: string): Promise<CausalLM> {
    const hf = await readHfConfig(dir);
    const cfg = modelConfigFromHf(hf);
    const tensors = await readWeights(dir);
    const specs = weightSpecs(cfg);
    checkTensors(dir, cfg, specs, tensors);
    assertFiniteTensors(dir, tensors);
    return new CausalLM(hf, (s) => {
      const t = tensors.get(s.name) as HostTensor;
      tensors.delete(s.name); // drop the host copy as soon as the Variable holds it
      return t.data;
    });
  }

  /** Writes config.json and model.safetensors (F32, or BF16 with {dtype: 'BF16'}) into dir. */
  async save(dir: string, opts: { dtype?: 'F32' | 'BF16'; maxShardBytes?: number } = {}): Promise<void> {
    this.assertLive();
    await mkdir(dir, { recursive: true });
    const out = new Map<string, WriteTensor>();
    for (const s of this.specs) {
      const v = this.weights.get(s.name) as tf.Variable;
      const data = (await v.data()) as Float32Array;
      const hfData = s.kind === 'linear' ? transposeMatrix(data, s.hfShape[1] as number, s.hfShape[0] as number) : data;
      out.set(s.name, { shape: s.hfShape, data: hfData });
    }
    await writeWeights(dir, out, { dtype: opts.dtype, maxShardBytes: opts.maxShardBytes });
    await writeHfConfig(dir, this.hfConfig);
  }

  /** Trainable Variables in a stable order (weight-map order: embedding, layers, norm, head). */
  trainableVariables(): tf.Variable[] {
    this.assertLive();
    return this.specs.map((s) => this.weights.get(s.name) as tf.Variable);
  }

  /** HF name -> Variable (linear weights are stored transposed, [in, out]). */
  namedVariables(): ReadonlyMap<string, tf.Variable> {
    this.assertLive();
    return this.weights;
  }

  /** Total number of parameters. */
  numParameters(): number {
    return this.specs.reduce((a, s) => a + s.hfShape.reduce((x, y) => x * y, 1), 0);
  }

  private readonly getWeight = (name: string): tf.Tensor => {
    const v = this.weights.get(name);
    if (!v) throw new Error(`model: no weight '${name}'`);
    return v;
  };

  /** Final-normed hidden states [B, T, D] of a padded batch (positions from the mask). */
  hidden(ids: tf.Tensor2D, attentionMask?: tf.Tensor2D): tf.Tensor3D {
    this.assertLive();
    return tf.tidy(() => {
      const [b, t] = ids.shape;
      const mask = attentionMask ?? tf.ones([b, t], 'int32'); // [B, T]
      const { hidden } = decoderHidden(this.config, this.getWeight, { ids, positions: positionsFromMask(mask), keyMask: mask });
      return tf.reshape(hidden, [b, t, this.config.hidden]) as tf.Tensor3D; // [B, T, D]
    });
  }

  /** LM head on hidden states: [N, D] -> logits [N, V]. */
  logitsFromHidden(hidden: tf.Tensor2D): tf.Tensor2D {
    this.assertLive();
    return lmHead(this.config, this.getWeight, hidden);
  }

  /** Logits [B, T, V] of ids [B, T] int32, left- or right-padded per attentionMask [B, T] (1 = token). */
  forward(ids: tf.Tensor2D, attentionMask?: tf.Tensor2D): tf.Tensor3D {
    this.assertLive();
    return tf.tidy(() => {
      const [b, t] = ids.shape;
      const h = this.hidden(ids, attentionMask); // [B, T, D]
      const logits = lmHead(this.config, this.getWeight, tf.reshape(h, [b * t, this.config.hidden])); // [B*T, V]
      return tf.reshape(logits, [b, t, this.config.vocabSize]) as tf.Tensor3D; // [B, T, V]
    });
  }

  /**
   * Forward of T new tokens after `past` cached ones (prefill: past undefined). positions [B, T]
   * are the RoPE positions, keyMask [B, past + T] marks real tokens. With lastOnly the head runs on
   * the last position only (a decode step needs nothing else). The returned kv tensors belong to
   * the caller (see generation's KvCache).
   */
  forwardCached(ids: tf.Tensor2D, positions: tf.Tensor2D, keyMask: tf.Tensor2D, past: LayerKv[] | undefined, lastOnly: boolean, headT?: tf.Tensor2D): CachedForward {
    this.assertLive();
    return tidyObject(() => {
      const [b, t] = ids.shape;
      const { hidden, kv } = decoderHidden(this.config, this.getWeight, { ids, positions, keyMask, past, keepKv: true, ops: INFER_OPS }); // [B*T, D]
      const h = lastOnly && t > 1
        ? (tf.reshape(tf.slice(tf.reshape(hidden, [b, t, this.config.hidden]), [0, t - 1, 0], [b, 1, this.config.hidden]), [b, this.config.hidden]) as tf.Tensor2D) // [B, D]
        : hidden;
      return { logits: lmHead(this.config, this.getWeight, h, headT, INFER_OPS), kv };
    });
  }

  /**
   * The LM head as a [D, V] matrix for inference (a new tensor the caller disposes): embed_tokens^T
   * when tied, else the stored lm_head. Weights must not change while it is in use.
   */
  inferenceHead(): tf.Tensor2D {
    this.assertLive();
    return tf.tidy(() => (this.config.tieEmbeddings ? tf.transpose(this.getWeight(EMBED)) : tf.clone(this.getWeight(LM_HEAD))) as tf.Tensor2D); // [D, V]
  }

  /** Frees every Variable; the model is unusable afterwards. */
  dispose(): void {
    if (this.disposed) return;
    for (const v of this.weights.values()) v.dispose();
    this.weights.clear();
    this.disposed = true;
  }

  private assertLive(): void {
    if (this.disposed) throw new Error('model: used after dispose()');
  }
}

/** Every expected tensor present with its HF shape, nothing unexpected: else a one-line error naming the tensor. */
function checkTensors(dir: string, cfg: ModelConfig, specs: WeightSpec[], tensors: Map<string, HostTensor>): void {
  const expected = new Set<string>();
  for (const s of specs) {
    expected.add(s.name);
    const t = tensors.get(s.name);
    if (!t) throw new CheckpointError(`${dir}: tensor '${s.name}' is missing (config.json model_type ${cfg.family}, ${cfg.layers} layers)`);
    if (t.shape.length !== s.hfShape.length || t.shape.some((d, i) => d !== s.hfShape[i])) {
      throw new CheckpointError(`${dir}: tensor '${s.name}' has shape [${t.shape.join(', ')}], config.json implies [${s.hfShape.join(', ')}]`);
    }
  }
  for (const name of tensors.keys()) {
    if (!expected.has(name) && !isIgnorableTensor(cfg, name)) {
      throw new CheckpointError(`${dir}: unexpected tensor '${name}' for config.json model_type ${cfg.family} (wrong model_type or layer count?)`);
    }
  }
}
