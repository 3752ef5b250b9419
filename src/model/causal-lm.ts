import * as tf from '@tensorflow/tfjs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Rng } from '../random/rng.ts';
import { modelConfigFromHf, type ModelConfig } from './config.ts';
import { decoderHidden, InferenceHead, lmHead, positionsFromMask } from './decoder.ts';
import { nativeKernelHere } from '../backend/native/index.ts';
import type { LayerKv } from './attention.ts';
import { tidyObject } from './tidy.ts';
import { INFER_OPS } from './ops/op-set.ts';
import { normalArray } from './init.ts';
import { CheckpointError } from './io/errors.ts';
import { UserError } from '../errors.ts';
import { readHfConfig, writeHfConfig, type HfModelConfig } from './io/hf-config.ts';
import { openWeights, writeWeights, type HostTensor, type WriteTensor } from './io/safetensors.ts';
import {
  ADAPTER_WEIGHTS,
  baseDirOf,
  isAdapterDir,
  readPeftConfig,
  readPeftTensors,
  writePeftAdapters,
  type PeftConfig,
} from './io/peft.ts';
import { LoraAdapters, loraSites, type LoraSettings } from './lora.ts';
import {
  EMBED,
  LM_HEAD,
  isIgnorableTensor,
  storedShape,
  transposeMatrix,
  weightSpecs,
  type WeightSpec,
} from './weight-map.ts';
import { assertFiniteTensors } from './io/guards.ts';
import { bf16Ready, isPacked, packBf16, unpackBf16 } from './bf16.ts';

/** Distinguishes the Variables of several models in one process (policy, reference): tfjs names are global. */
let instanceCounter = 0;

/** Output of a cached forward: logits and the keys/values of every token seen so far. */
export interface CachedForward {
  logits: tf.Tensor2D; // [B*T', V]: T' = 1 with lastOnly, else T
  kv: LayerKv[]; // per layer, past ++ new
}

/** Memory settings of the training forward (train.logprobChunk, train.checkpointLayers). */
export interface TrainingMemory {
  /** Rows (tokens) per chunk of the log-prob head; 0 = the whole micro-batch at once. */
  logprobChunk: number;
  /** Recompute each decoder layer in the backward pass instead of keeping its activations. */
  checkpointLayers: boolean;
}

/** What CausalLM.load measured: the largest host (JS) float32 memory it held at once while reading weights. */
export interface LoadInfo {
  hostPeakBytes: number;
  /** Sum of the float32 sizes of every weight (what reading them all first would hold). */
  float32Bytes: number;
}

/** Whether a weight is kept in bfloat16 when the base is frozen that way: every matrix with an even row length. */
function packable(s: WeightSpec): boolean {
  const shape = storedShape(s);
  return shape.length === 2 && (shape[1] as number) % 2 === 0;
}

/** With `bf16` a packable weight becomes a frozen packed bfloat16 Variable (bf16.ts), else float32. */
function makeVariable(s: WeightSpec, hfData: Float32Array, id: number, bf16 = false): tf.Variable {
  // Linear weights: HF [out, in] -> stored [in, out], once per load (see weight-map.ts).
  const data = s.kind === 'linear' ? transposeMatrix(hfData, s.hfShape[0] as number, s.hfShape[1] as number) : hfData;
  const shape = storedShape(s);
  if (bf16 && packable(s)) {
    const packed = [shape[0] as number, (shape[1] as number) / 2]; // [rows, cols / 2]
    return tf.tidy(() => tf.variable(tf.tensor(packBf16(data), packed, 'int32'), false, `lm${id}/${s.name}`));
  }
  return tf.tidy(() => tf.variable(tf.tensor(data, shape, 'float32'), true, `lm${id}/${s.name}`));
}

/** Options of CausalLM.random and CausalLM.load. */
export interface BuildOptions {
  /**
   * Keep every base matrix (embedding, projections, head) as frozen bfloat16 (bf16.ts): for LoRA
   * training, where the base takes no gradient. Needs the native kernels.
   */
  bf16Base?: boolean;
}

function assertBf16Ready(): void {
  if (!bf16Ready())
    throw new UserError(
      "model: a bfloat16 base needs the native backend's bfloat16 kernels (run.backend: native, with the " +
        'prebuilt or locally built kernels)',
    );
}

/**
 * From this many bytes a tied head is multiplied through the GEMM's transpose flag rather than
 * transposed once per generate call. Measured on the native kernels: the flag's product is 5-20%
 * slower (16 x 128 by 2,000: 142-152 us against 135 us; 16 x 1,024 by 151,936: 71-73 ms against
 * 58-60 ms), bit for bit the same, and saves the copy (0.58 GiB at Qwen3-0.6B's shape).
 */
const TRANSPOSED_HEAD_LIMIT = 2 ** 26;

/**
 * A decoder-only causal LM (Llama / Qwen2 / Qwen3) whose weights are tfjs Variables keyed by their
 * exact HF names, optionally with LoRA adapters (lora.ts) on its projections. Owns its Variables:
 * call dispose().
 */
export class CausalLM {
  readonly config: ModelConfig;
  /** The config.json this model was built from (written back by save()). */
  readonly hfConfig: HfModelConfig;
  private readonly weights: Map<string, tf.Variable>;
  private readonly specs: WeightSpec[];
  private readonly id: number;
  /** False for a baseView(): it shares another model's Variables and frees none. */
  private readonly owner: boolean;
  private adapters: LoraAdapters | undefined;
  private disposed = false;
  /** The folder the base weights came from (adapter_config.json's base_model_name_or_path). */
  sourceDir?: string;
  /** Set by load(). */
  loadInfo?: LoadInfo;
  /** Memory settings of the training forward (hidden(), tokenStats). */
  memory: TrainingMemory = { logprobChunk: 0, checkpointLayers: false };

  private constructor(hfConfig: HfModelConfig, weights: Map<string, tf.Variable>, id: number, owner: boolean) {
    this.hfConfig = hfConfig;
    this.config = modelConfigFromHf(hfConfig);
    this.specs = weightSpecs(this.config);
    this.weights = weights;
    this.id = id;
    this.owner = owner;
  }

  /** values(spec) gives each tensor in HF layout. */
  private static build(
    hfConfig: HfModelConfig,
    values: (spec: WeightSpec) => Float32Array,
    opts: BuildOptions,
  ): CausalLM {
    if (opts.bf16Base) assertBf16Ready();
    const id = instanceCounter++;
    const weights = new Map<string, tf.Variable>();
    try {
      for (const s of weightSpecs(modelConfigFromHf(hfConfig)))
        weights.set(s.name, makeVariable(s, values(s), id, opts.bf16Base));
    } catch (err) {
      for (const v of weights.values()) v.dispose();
      throw err;
    }
    return new CausalLM(hfConfig, weights, id, true);
  }

  /** A random-init model: Linear/Embedding N(0, 0.02) from the seeded Rng, norms 1, biases 0. */
  static random(hfConfig: HfModelConfig, seed: number, opts: BuildOptions = {}): CausalLM {
    const rng = new Rng(seed);
    return CausalLM.build(
      hfConfig,
      (s) => {
        const n = s.hfShape.reduce((a, b) => a * b, 1);
        // drawn in HF layout, so a seed gives the same HF tensors
        if (s.init === 'normal') return normalArray(n, 0.02, rng);
        return new Float32Array(n).fill(s.init === 'ones' ? 1 : 0);
      },
      opts,
    );
  }

  /**
   * Loads config.json + safetensors weights from an HF-layout folder; one-line error per bad tensor.
   * Names and shapes come from the headers first; then each tensor is read, converted to float32
   * (F16 / BF16 included), checked finite and turned into its Variable before the next is read,
   * so host memory holds one tensor at a time (loadInfo), not a float32 copy of the whole model.
   * A PEFT adapter folder (adapter_config.json, no config.json) loads its base model
   * (base_model_name_or_path, or `opts.base`) with the adapters attached.
   */
  static async load(dir: string, opts: { base?: string } & BuildOptions = {}): Promise<CausalLM> {
    if (isAdapterDir(dir)) {
      const peft = await readPeftConfig(dir);
      const base = await CausalLM.load(opts.base ?? baseDirOf(dir, peft), { bf16Base: opts.bf16Base });
      try {
        await base.loadAdapters(dir, peft);
      } catch (err) {
        base.dispose();
        throw err;
      }
      return base;
    }
    const hf = await readHfConfig(dir);
    const cfg = modelConfigFromHf(hf);
    const specs = weightSpecs(cfg);
    if (opts.bf16Base) assertBf16Ready();
    const src = await openWeights(dir);
    const id = instanceCounter++;
    const weights = new Map<string, tf.Variable>();
    let live = 0;
    let peak = 0;
    try {
      checkTensors(dir, cfg, specs, src.entries);
      for (const s of specs) {
        const t = await src.read(s.name);
        assertFiniteTensors(dir, new Map([[s.name, t]]));
        // The decoded tensor and, for a linear weight, its transpose are the host memory held now.
        live = t.data.byteLength * (s.kind === 'linear' ? 2 : 1);
        peak = Math.max(peak, live);
        weights.set(s.name, makeVariable(s, t.data, id, opts.bf16Base));
      }
    } catch (err) {
      for (const v of weights.values()) v.dispose();
      throw err;
    } finally {
      await src.close();
    }
    const model = new CausalLM(hf, weights, id, true);
    model.sourceDir = resolve(dir);
    model.loadInfo = {
      hostPeakBytes: peak,
      float32Bytes: specs.reduce((a, s) => a + 4 * s.hfShape.reduce((x, y) => x * y, 1), 0),
    };
    return model;
  }

  /** The LoRA adapters, when attached. */
  get lora(): LoraAdapters | undefined {
    return this.adapters;
  }

  /**
   * Attaches fresh adapters (A Kaiming-uniform from Rng(seed), B zeros): the model's outputs are unchanged until they
   * train.
   */
  attachLora(settings: LoraSettings, seed: number): LoraAdapters {
    this.assertLive();
    if (!this.owner) throw new Error('model: a base view cannot hold adapters');
    if (this.adapters) throw new Error('model: LoRA adapters are already attached');
    this.adapters = LoraAdapters.fresh(this.config, settings, `lm${this.id}/lora`, seed);
    return this.adapters;
  }

  /** Attaches the adapters of a PEFT folder (adapter_config.json + adapter_model.safetensors). */
  async loadAdapters(dir: string, peft?: PeftConfig): Promise<LoraAdapters> {
    this.assertLive();
    if (this.adapters) throw new Error('model: LoRA adapters are already attached');
    const cfg = peft ?? (await readPeftConfig(dir));
    const tensors = await readPeftTensors(dir);
    const file = join(dir, ADAPTER_WEIGHTS);
    const r = cfg.settings.rank;
    const expected = new Set<string>();
    for (const site of loraSites(this.config, cfg.settings.targets)) {
      for (const [name, shape] of [
        [site.a, [r, site.in]],
        [site.b, [site.out, r]],
      ] as [string, number[]][]) {
        expected.add(name);
        const t = tensors.get(name);
        if (!t)
          throw new CheckpointError(
            `${file}: tensor '${name}' is missing (target_modules ${cfg.settings.targets.join(', ')}, ` +
              `${this.config.layers} layers)`,
          );
        if (t.shape.join() !== shape.join())
          throw new CheckpointError(
            `${file}: tensor '${name}' has shape [${t.shape.join(', ')}], r ${r} and the base model imply ` +
              `[${shape.join(', ')}]`,
          );
      }
    }
    for (const name of tensors.keys())
      if (!expected.has(name))
        throw new CheckpointError(
          `${file}: unexpected tensor '${name}' for target_modules ${cfg.settings.targets.join(', ')}`,
        );
    assertFiniteTensors(file, tensors);
    this.adapters = new LoraAdapters(
      this.config,
      cfg.settings,
      (site, which) => (tensors.get(which === 'A' ? site.a : site.b) as HostTensor).data,
      `lm${this.id}/lora`,
      0,
    );
    return this.adapters;
  }

  /**
   * The same model without its adapters (PEFT's disable_adapter()): a view that shares this model's
   * base Variables, no copy, so a LoRA run's KL or DPO reference is the frozen base for free. Its
   * dispose() frees nothing; it must not outlive this model.
   */
  baseView(): CausalLM {
    this.assertLive();
    const view = new CausalLM(this.hfConfig, this.weights, this.id, false);
    view.sourceDir = this.sourceDir;
    view.memory = this.memory;
    return view;
  }

  /**
   * Writes config.json and model.safetensors (F32, or BF16 with {dtype: 'BF16'}) into dir: a
   * Hugging Face checkpoint any loader reads. With adapters attached their update is merged into
   * the weights (W + alpha / r * B A; saveAdapters writes them apart).
   */
  async save(dir: string, opts: { dtype?: 'F32' | 'BF16'; maxShardBytes?: number } = {}): Promise<void> {
    this.assertLive();
    await mkdir(dir, { recursive: true });
    const sites = new Map((this.adapters?.sites ?? []).map((s) => [s.base, s]));
    const out = new Map<string, WriteTensor>();
    for (const s of this.specs) {
      const v = this.weights.get(s.name) as tf.Variable;
      const site = sites.get(s.name);
      let data: Float32Array;
      const base = async (): Promise<Float32Array> =>
        isPacked(v) ? unpackBf16((await v.data()) as Int32Array) : ((await v.data()) as Float32Array);
      if (site && this.adapters) {
        const delta = (this.adapters as LoraAdapters).delta(site); // [in, out]
        const sum = await delta.data();
        delta.dispose();
        data = await base();
        for (let i = 0; i < data.length; i++) (data as Float32Array)[i] += sum[i] as number;
      } else data = await base();
      const hfData = s.kind === 'linear' ? transposeMatrix(data, s.hfShape[1] as number, s.hfShape[0] as number) : data;
      out.set(s.name, { shape: s.hfShape, data: hfData });
    }
    await writeWeights(dir, out, { dtype: opts.dtype, maxShardBytes: opts.maxShardBytes });
    await writeHfConfig(dir, this.hfConfig);
  }

  /**
   * Writes the adapters in PEFT's layout (adapter_config.json, adapter_model.safetensors); base defaults to sourceDir.
   */
  async saveAdapters(dir: string, opts: { base?: string } = {}): Promise<void> {
    this.assertLive();
    if (!this.adapters) throw new Error('model: no LoRA adapters to save');
    await mkdir(dir, { recursive: true });
    await writePeftAdapters(
      dir,
      this.adapters.settings,
      opts.base ?? this.sourceDir ?? '',
      await this.adapters.hfValues(),
    );
  }

  /** What a training checkpoint holds: the adapters alone when attached, else the whole model. */
  async saveTrainable(dir: string): Promise<void> {
    if (this.adapters) await this.saveAdapters(dir);
    else await this.save(dir);
  }

  /**
   * Trainable Variables in a stable order: the adapters (PEFT order) when attached, else every
   * weight in weight-map order (embedding, layers, norm, head).
   */
  trainableVariables(): tf.Variable[] {
    this.assertLive();
    if (this.adapters) return [...this.adapters.named().values()];
    this.assertFloatBase();
    return this.specs.map((s) => this.weights.get(s.name) as tf.Variable);
  }

  /**
   * Stable name -> trainable Variable: PEFT names of the adapters when attached, else HF names (linear weights stored
   * [in, out]).
   */
  namedVariables(): ReadonlyMap<string, tf.Variable> {
    this.assertLive();
    if (this.adapters) return this.adapters.named();
    this.assertFloatBase();
    return this.weights;
  }

  /** Whether the base matrices are frozen bfloat16 (BuildOptions.bf16Base, packBase). */
  get bf16Base(): boolean {
    return [...this.weights.values()].some((v) => isPacked(v));
  }

  /**
   * Turns the float32 base matrices into frozen bfloat16 ones, one at a time (a model loaded in
   * float32 that will train LoRA adapters: train.lora.baseDtype). Rounds to nearest even.
   */
  packBase(): void {
    this.assertLive();
    if (!this.owner) throw new Error('model: a base view cannot change its weights');
    assertBf16Ready();
    for (const s of this.specs) {
      const v = this.weights.get(s.name) as tf.Variable;
      if (!packable(s) || isPacked(v)) continue;
      const [rows, cols] = v.shape as [number, number];
      const packed = packBf16(v.dataSync() as Float32Array);
      const next = tf.tidy(() => tf.variable(tf.tensor(packed, [rows, cols / 2], 'int32'), false, v.name + '/bf16'));
      v.dispose();
      this.weights.set(s.name, next);
    }
  }

  private assertFloatBase(): void {
    if (this.bf16Base)
      throw new Error('model: the bfloat16 base is frozen; only LoRA adapters train on it (train.lora.rank > 0)');
  }

  /** HF name -> base Variable (linear weights stored [in, out]), adapters or not. */
  baseVariables(): ReadonlyMap<string, tf.Variable> {
    this.assertLive();
    return this.weights;
  }

  /** Total number of parameters. */
  numParameters(): number {
    return this.specs.reduce((a, s) => a + s.hfShape.reduce((x, y) => x * y, 1), 0);
  }

  private readonly getWeight = (name: string): tf.Tensor => {
    const v = this.weights.get(name) ?? this.adapters?.variable(name);
    if (!v) throw new Error(`model: no weight '${name}'`);
    return v;
  };

  /** The weights of layer i that need gradients (activation checkpointing passes them as the layer's inputs). */
  private layerTrainables(i: number): string[] {
    if (this.adapters) return this.adapters.layerNames(i);
    const prefix = `model.layers.${i}.`;
    return this.specs.filter((s) => s.name.startsWith(prefix)).map((s) => s.name);
  }

  /**
   * Final-normed hidden states [B, T, D] of a padded batch (positions from the mask): the training
   * forward (adapter dropout on, activation checkpointing per `memory`).
   */
  hidden(ids: tf.Tensor2D, attentionMask?: tf.Tensor2D): tf.Tensor3D {
    return this.hiddenStates(ids, attentionMask, true);
  }

  private hiddenStates(ids: tf.Tensor2D, attentionMask: tf.Tensor2D | undefined, train: boolean): tf.Tensor3D {
    this.assertLive();
    return tf.tidy(() => {
      const [b, t] = ids.shape;
      const mask = attentionMask ?? tf.ones([b, t], 'int32'); // [B, T]
      const checkpoint = train && this.memory.checkpointLayers ? (i: number) => this.layerTrainables(i) : undefined;
      const { hidden } = decoderHidden(this.config, this.getWeight, {
        ids,
        positions: positionsFromMask(mask),
        keyMask: mask,
        lora: this.adapters?.lookup(train),
        checkpoint,
      });
      return tf.reshape(hidden, [b, t, this.config.hidden]) as tf.Tensor3D; // [B, T, D]
    });
  }

  /** The head's weight as the log-prob op takes it: tied [V, D] (embed_tokens) or stored [D, V] (lm_head). */
  headWeight(): { w: tf.Tensor2D; tied: boolean; trainable: boolean } {
    this.assertLive();
    const tied = this.config.tieEmbeddings;
    return { w: this.getWeight(tied ? EMBED : LM_HEAD) as tf.Tensor2D, tied, trainable: !this.adapters };
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
      const h = this.hiddenStates(ids, attentionMask, false); // [B, T, D]
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
  forwardCached(
    ids: tf.Tensor2D,
    positions: tf.Tensor2D,
    keyMask: tf.Tensor2D,
    past: LayerKv[] | undefined,
    lastOnly: boolean,
    headT?: InferenceHead,
  ): CachedForward {
    this.assertLive();
    return tidyObject(() => {
      const [b, t] = ids.shape;
      const { hidden, kv } = decoderHidden(this.config, this.getWeight, {
        ids,
        positions,
        keyMask,
        past,
        keepKv: true,
        ops: INFER_OPS,
        lora: this.adapters?.lookup(false),
      }); // [B*T, D]
      const h =
        lastOnly && t > 1
          ? (tf.reshape(
              tf.slice(tf.reshape(hidden, [b, t, this.config.hidden]), [0, t - 1, 0], [b, 1, this.config.hidden]),
              [b, this.config.hidden],
            ) as tf.Tensor2D) // [B, D]
          : hidden;
      return { logits: lmHead(this.config, this.getWeight, h, headT, INFER_OPS), kv };
    });
  }

  /**
   * The LM head for inference (decoder.ts InferenceHead, which the caller disposes): a tied table of
   * 64 MiB or more as stored where the native GEMM takes a transposed operand, else embed_tokens^T;
   * the stored lm_head [D, V] when untied. Weights must not change while it is in use.
   */
  inferenceHead(): InferenceHead {
    this.assertLive();
    const table = this.getWeight(this.config.tieEmbeddings ? EMBED : LM_HEAD) as tf.Tensor2D;
    if (isPacked(table)) return new InferenceHead(tf.reshape(table, table.shape), this.config.tieEmbeddings); // shared
    if (!this.config.tieEmbeddings) return new InferenceHead(tf.reshape(table, table.shape), false); // [D, V] shared
    if (table.size * 4 >= TRANSPOSED_HEAD_LIMIT && nativeKernelHere('BatchMatMul'))
      return new InferenceHead(tf.reshape(table, table.shape), true); // [V, D] shared
    return new InferenceHead(tf.transpose(table), false); // [D, V]
  }

  /** Frees every Variable (a baseView frees none); the model is unusable afterwards. */
  dispose(): void {
    if (this.disposed) return;
    if (this.owner) {
      for (const v of this.weights.values()) v.dispose();
      this.weights.clear();
      this.adapters?.dispose();
    }
    this.adapters = undefined;
    this.disposed = true;
  }

  private assertLive(): void {
    if (this.disposed) throw new Error('model: used after dispose()');
  }
}

/** Every expected tensor present with its HF shape, nothing unexpected: else a one-line error naming the tensor. */
function checkTensors(
  dir: string,
  cfg: ModelConfig,
  specs: WeightSpec[],
  tensors: ReadonlyMap<string, { shape: number[] }>,
): void {
  const expected = new Set<string>();
  for (const s of specs) {
    expected.add(s.name);
    const t = tensors.get(s.name);
    if (!t)
      throw new CheckpointError(
        `${dir}: tensor '${s.name}' is missing (config.json model_type ${cfg.family}, ${cfg.layers} layers)`,
      );
    if (t.shape.length !== s.hfShape.length || t.shape.some((d, i) => d !== s.hfShape[i])) {
      throw new CheckpointError(
        `${dir}: tensor '${s.name}' has shape [${t.shape.join(', ')}], config.json implies [${s.hfShape.join(', ')}]`,
      );
    }
  }
  for (const name of tensors.keys()) {
    if (!expected.has(name) && !isIgnorableTensor(cfg, name)) {
      throw new CheckpointError(
        `${dir}: unexpected tensor '${name}' for config.json model_type ${cfg.family} (wrong model_type or layer ` +
          `count?)`,
      );
    }
  }
}
