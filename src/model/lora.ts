/**
 * LoRA adapters (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models",
 * arXiv:2106.09685) in the layout of Hugging Face PEFT: a frozen projection W [out, in] gains
 *   y = x W^T + (alpha / r) * dropout(x) A^T B^T,   A [r, in], B [out, r]
 * with A Kaiming-uniform (PEFT's init_lora_weights=True: kaiming_uniform_(a=sqrt(5)), i.e.
 * U(-1/sqrt(in), 1/sqrt(in))) and B zeros, so a fresh adapter leaves the model unchanged.
 * rsLoRA (use_rslora, Kalajdzievski 2023) scales by alpha / sqrt(r) instead.
 *
 * Like the base linear weights, A and B are held transposed ([in, r] and [r, out]) so the forward
 * is two plain matmuls (weight-map.ts: a transposed matmul is slow on wasm); PEFT files hold the
 * HF layout and loading / saving transpose once.
 */
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../random/rng.ts';
import type { ModelConfig } from './config.ts';
import { layerNames } from './weight-map.ts';

/** The projections PEFT names in target_modules for Llama / Qwen2 / Qwen3 decoders. */
export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

export interface LoraSettings {
  rank: number;
  alpha: number;
  dropout: number;
  targets: readonly LoraTarget[];
  /** rsLoRA scaling alpha / sqrt(r) (PEFT use_rslora); default alpha / r. */
  rslora?: boolean;
}

/** One adapted projection: names of its base weight and of its two PEFT tensors. */
export interface LoraSite {
  /** HF name of the frozen base weight, e.g. model.layers.0.self_attn.q_proj.weight. */
  base: string;
  /** PEFT names: base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight / lora_B.weight. */
  a: string;
  b: string;
  layer: number;
  target: LoraTarget;
  in: number;
  out: number;
}

/** What the decoder needs to add an adapter to one projection (weights looked up by `a`, `b`). */
interface LoraApply {
  a: string; // [in, r] stored
  b: string; // [r, out] stored
  scale: number;
  /** Dropout rate on the adapter's input; 0 at inference. */
  dropout: number;
  /** Seed of this application's dropout mask (recomputations reuse it). */
  seed: number;
}

/** Looks up the adapter of a base weight name (undefined: not adapted, or adapters disabled). */
export type LoraLookup = (baseName: string) => LoraApply | undefined;

/** PEFT's prefix of a causal LM's adapter tensors (PeftModelForCausalLM.base_model.model). */
const PEFT_PREFIX = 'base_model.model.';

/** PEFT tensor name of an HF base weight's adapter matrix: `<prefix><module>.lora_A.weight`. */
export function peftName(baseWeight: string, which: 'A' | 'B'): string {
  return `${PEFT_PREFIX}${baseWeight.replace(/\.weight$/, '')}.lora_${which}.weight`;
}

function loraScale(s: Pick<LoraSettings, 'rank' | 'alpha' | 'rslora'>): number {
  return s.rslora ? s.alpha / Math.sqrt(s.rank) : s.alpha / s.rank;
}

/** Every projection the settings adapt, in layer order (q, k, v, o, gate, up, down within a layer). */
export function loraSites(c: ModelConfig, targets: readonly LoraTarget[]): LoraSite[] {
  const want = new Set(targets);
  const sites: LoraSite[] = [];
  const qDim = c.heads * c.headDim;
  const kvDim = c.kvHeads * c.headDim;
  for (let i = 0; i < c.layers; i++) {
    const n = layerNames(c, i);
    const shapes: Record<LoraTarget, [string, number, number]> = {
      q_proj: [n.q, c.hidden, qDim],
      k_proj: [n.k, c.hidden, kvDim],
      v_proj: [n.v, c.hidden, kvDim],
      o_proj: [n.o, qDim, c.hidden],
      gate_proj: [n.gate, c.hidden, c.intermediate],
      up_proj: [n.up, c.hidden, c.intermediate],
      down_proj: [n.down, c.intermediate, c.hidden],
    };
    for (const t of LORA_TARGETS) {
      if (!want.has(t)) continue;
      const [base, inp, out] = shapes[t];
      sites.push({ base, a: peftName(base, 'A'), b: peftName(base, 'B'), layer: i, target: t, in: inp, out });
    }
  }
  return sites;
}

/** PEFT's default A: kaiming_uniform_(a = sqrt(5)) on [r, in] gives U(-1/sqrt(in), 1/sqrt(in)), drawn in HF layout. */
function kaimingUniformA(rank: number, fanIn: number, rng: Rng): Float32Array {
  const bound = 1 / Math.sqrt(fanIn);
  const out = new Float32Array(rank * fanIn);
  for (let i = 0; i < out.length; i++) out[i] = (2 * rng.float() - 1) * bound;
  return out;
}

/**
 * The adapters of one model: Variables keyed by PEFT name, in site order (A then B per site),
 * stored transposed. Owns its Variables: dispose().
 */
export class LoraAdapters {
  readonly settings: LoraSettings;
  readonly sites: LoraSite[];
  readonly scale: number;
  private readonly vars = new Map<string, tf.Variable>();
  private readonly byBase = new Map<string, LoraSite>();
  private readonly seed: number;
  /** Training forwards so far: with the layer and site index it seeds each dropout mask. */
  private forwards = 0;

  /**
   * values(site, 'A' | 'B') gives each tensor in PEFT's HF layout (A [r, in], B [out, r]).
   * `prefix` keeps tfjs Variable names unique per model instance.
   */
  constructor(
    c: ModelConfig,
    settings: LoraSettings,
    values: (site: LoraSite, which: 'A' | 'B') => Float32Array,
    prefix: string,
    seed: number,
  ) {
    if (!(Number.isInteger(settings.rank) && settings.rank > 0))
      throw new Error(`lora: rank must be a positive integer, got ${settings.rank}`);
    if (!(settings.dropout >= 0 && settings.dropout < 1))
      throw new Error(`lora: dropout must be in [0, 1), got ${settings.dropout}`);
    if (settings.targets.length === 0) throw new Error('lora: no target modules');
    this.settings = { ...settings, targets: [...settings.targets] };
    this.sites = loraSites(c, settings.targets);
    this.scale = loraScale(settings);
    this.seed = seed;
    const r = settings.rank;
    try {
      for (const s of this.sites) {
        const a = values(s, 'A'); // [r, in]
        const b = values(s, 'B'); // [out, r]
        if (a.length !== r * s.in) throw new Error(`lora: ${s.a} has ${a.length} values, expected ${r} x ${s.in}`);
        if (b.length !== s.out * r) throw new Error(`lora: ${s.b} has ${b.length} values, expected ${s.out} x ${r}`);
        this.vars.set(
          s.a,
          tf.tidy(() => tf.variable(tf.transpose(tf.tensor2d(a, [r, s.in])), true, `${prefix}/${s.a}`)),
        ); // [in, r]
        this.vars.set(
          s.b,
          tf.tidy(() => tf.variable(tf.transpose(tf.tensor2d(b, [s.out, r])), true, `${prefix}/${s.b}`)),
        ); // [r, out]
        this.byBase.set(s.base, s);
      }
    } catch (err) {
      this.dispose();
      throw err;
    }
  }

  /** Fresh adapters as PEFT initialises them: A Kaiming-uniform from Rng(seed), B zeros. */
  static fresh(c: ModelConfig, settings: LoraSettings, prefix: string, seed: number): LoraAdapters {
    const rng = new Rng(seed);
    return new LoraAdapters(
      c,
      settings,
      (s, which) =>
        which === 'A' ? kaimingUniformA(settings.rank, s.in, rng) : new Float32Array(s.out * settings.rank),
      prefix,
      seed,
    );
  }

  /** PEFT name -> Variable (stored transposed), in site order. */
  named(): ReadonlyMap<string, tf.Variable> {
    return this.vars;
  }

  variable(name: string): tf.Variable | undefined {
    return this.vars.get(name);
  }

  /** Names of the adapter Variables of layer i (activation checkpointing passes them as the layer's inputs). */
  layerNames(i: number): string[] {
    return this.sites.filter((s) => s.layer === i).flatMap((s) => [s.a, s.b]);
  }

  /**
   * The decoder's lookup. `train`: dropout on (a training forward draws fresh masks, seeded from
   * the adapters' seed and a forward counter); otherwise no dropout (generation, references).
   */
  lookup(train: boolean): LoraLookup {
    const rate = train ? this.settings.dropout : 0;
    const call = train && rate > 0 ? this.forwards++ : 0;
    const index = new Map(this.sites.map((s, k) => [s.base, k]));
    return (base) => {
      const s = this.byBase.get(base);
      if (!s) return undefined;
      const k = index.get(base) as number;
      return { a: s.a, b: s.b, scale: this.scale, dropout: rate, seed: (this.seed * 1000003 + call * 7919 + k) | 0 };
    };
  }

  /** Site and HF-layout values of each adapter (A [r, in], B [out, r]), for saving. */
  async hfValues(): Promise<Map<string, { shape: number[]; data: Float32Array }>> {
    const out = new Map<string, { shape: number[]; data: Float32Array }>();
    const r = this.settings.rank;
    for (const s of this.sites) {
      const a = tf.tidy(() => tf.transpose(this.vars.get(s.a) as tf.Variable)); // [r, in]
      const b = tf.tidy(() => tf.transpose(this.vars.get(s.b) as tf.Variable)); // [out, r]
      out.set(s.a, { shape: [r, s.in], data: (await a.data()) as Float32Array });
      out.set(s.b, { shape: [s.out, r], data: (await b.data()) as Float32Array });
      tf.dispose([a, b]);
    }
    return out;
  }

  /** The stored-layout update scale * A^T B^T [in, out] of one site (to merge into the stored base weight). */
  delta(site: LoraSite): tf.Tensor2D {
    return tf.tidy(
      () =>
        tf.mul(
          tf.matMul(this.vars.get(site.a) as tf.Variable, this.vars.get(site.b) as tf.Variable),
          this.scale,
        ) as tf.Tensor2D,
    ); // [in, r] @ [r, out] -> [in, out]
  }

  dispose(): void {
    for (const v of this.vars.values()) v.dispose();
    this.vars.clear();
  }
}
