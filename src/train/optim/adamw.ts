import * as tf from '@tensorflow/tfjs';
import { nativeAdamW } from '../../backend/native/index.ts';

/**
 * AdamW: Adam with decoupled weight decay (Loshchilov & Hutter 2019, arXiv:1711.05101, Algorithm 2),
 * with the update order of torch.optim.AdamW so hyper-parameters transfer from PyTorch recipes:
 *   p <- p * (1 - lr * wd)                     (decoupled decay, before the Adam step)
 *   m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
 *   p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 * tfjs ships Adam but no AdamW, and its Adam keys moments by position in the gradient map; this one
 * keys them by variable name, so state survives a checkpoint round trip whatever the map order.
 *
 * Weight decay applies by default to variables of rank >= 2 only (matrices and embeddings), not to
 * norms and biases: the usual practice (nanoGPT configure_optimizers, HF Trainer's no-decay list).
 *
 * The learning rate comes with each step (applyGradients(grads, lr): the trainers compute it from
 * the schedule, optimizer.ts learningRateAt). State (m, v per variable and the step) goes to / comes
 * from named float32 arrays for optimizer.safetensors.
 *
 * `fused`: the whole step runs as one native pass per variable (backend/native/adamw.ts, in place on
 * the wasm heap) instead of eight tfjs ops per variable; same update up to float rounding. Trainers
 * get it through createAdamW (optimizer.ts) whenever the native kernels are loaded.
 */
export interface AdamWOptions {
  /**
   * The rate of a step given none (tf.Optimizer's applyGradients(grads) and minimize). No default:
   * without it, a step must be given its rate (the trainers pass the scheduled rate of each step),
   * so a forgotten rate is an error, never a silent step of size 0.
   */
  lr?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** Which variables get weight decay; default: rank >= 2. */
  decay?: (name: string, shape: readonly number[]) => boolean;
  /** One fused native pass per variable (default false). */
  fused?: boolean;
}

/** A named float32 array with its shape (one tensor of a safetensors file). */
export interface NamedArray {
  shape: number[];
  data: Float32Array;
}

export const STEP_KEY = 'step';
const M_SUFFIX = '.exp_avg';
const V_SUFFIX = '.exp_avg_sq';

/** tfjs-core's NamedTensor (not re-exported by @tensorflow/tfjs). */
type NamedTensor = { name: string; tensor: tf.Tensor };

interface Moments {
  m: tf.Variable;
  v: tf.Variable;
}

export class AdamW extends tf.Optimizer {
  static get className(): string {
    return 'AdamW';
  }

  /** The rate of a step given none (undefined: every step must name its rate). */
  private readonly lr: number | undefined;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  readonly fused: boolean;
  private readonly decay: (name: string, shape: readonly number[]) => boolean;
  private moments = new Map<string, Moments>();
  /** Number of updates applied (t in the bias corrections). */
  private t = 0;

  constructor(opts: AdamWOptions) {
    super();
    this.lr = opts.lr;
    this.fused = opts.fused ?? false;
    this.beta1 = opts.beta1 ?? 0.9;
    this.beta2 = opts.beta2 ?? 0.999;
    this.eps = opts.eps ?? 1e-8;
    this.weightDecay = opts.weightDecay ?? 0;
    this.decay = opts.decay ?? ((_name, shape) => shape.length >= 2);
    if (this.lr !== undefined && !(this.lr >= 0)) throw new Error(`AdamW: lr must be >= 0, got ${this.lr}`);
    if (!(this.beta1 >= 0 && this.beta1 < 1)) throw new Error(`AdamW: beta1 must be in [0, 1), got ${this.beta1}`);
    if (!(this.beta2 >= 0 && this.beta2 < 1)) throw new Error(`AdamW: beta2 must be in [0, 1), got ${this.beta2}`);
    if (!(this.eps > 0)) throw new Error(`AdamW: eps must be > 0, got ${this.eps}`);
    if (!(this.weightDecay >= 0)) throw new Error(`AdamW: weightDecay must be >= 0, got ${this.weightDecay}`);
  }

  get step(): number {
    return this.t;
  }

  private variable(name: string): tf.Variable {
    const v = tf.engine().registeredVariables[name];
    if (!v) throw new Error(`AdamW: no registered variable named '${name}'`);
    return v;
  }

  private momentsOf(name: string, value: tf.Variable): Moments {
    let mv = this.moments.get(name);
    if (!mv) {
      mv = tf.tidy(() => ({ m: tf.variable(tf.zerosLike(value), false), v: tf.variable(tf.zerosLike(value), false) }));
      this.moments.set(name, mv);
    }
    return mv;
  }

  /** One AdamW step at learning rate `lr` (the trainers pass the scheduled rate of the step). */
  applyGradients(variableGradients: tf.NamedTensorMap | NamedTensor[], lr: number | undefined = this.lr): void {
    if (lr === undefined)
      throw new Error(
        "AdamW: a step without a learning rate: pass the step's rate to applyGradients (or a default one to the " +
          'constructor)',
      );
    if (!(lr >= 0)) throw new Error(`AdamW: lr must be >= 0, got ${lr}`);
    const named: [string, tf.Tensor][] = Array.isArray(variableGradients)
      ? variableGradients.map((g) => [g.name, g.tensor])
      : Object.entries(variableGradients);
    this.t += 1;
    const live: { name: string; grad: tf.Tensor; value: tf.Variable; mv: Moments }[] = [];
    for (const [name, grad] of named) {
      if (grad == null) continue;
      const value = this.variable(name);
      if (grad.shape.join() !== value.shape.join()) {
        throw new Error(
          `AdamW: gradient of '${name}' has shape [${grad.shape.join(', ')}], variable has [${value.shape.join(', ')}]`,
        );
      }
      live.push({ name, grad, value, mv: this.momentsOf(name, value) });
    }
    if (this.fused) {
      const hp = {
        lr,
        beta1: this.beta1,
        beta2: this.beta2,
        eps: this.eps,
        weightDecay: live.map((x) => (this.decay(x.name, x.value.shape) ? this.weightDecay : 0)),
      };
      nativeAdamW(
        live.map((x) => x.value),
        live.map((x) => x.grad),
        live.map((x) => x.mv.m),
        live.map((x) => x.mv.v),
        this.t,
        hp,
      );
    } else {
      const bc1 = 1 - this.beta1 ** this.t;
      const bc2 = 1 - this.beta2 ** this.t;
      for (const { name, grad, value, mv } of live) {
        const { m, v } = mv;
        const wd = this.decay(name, value.shape) ? this.weightDecay : 0;
        tf.tidy(() => {
          const m1 = tf.add(tf.mul(m, this.beta1), tf.mul(grad, 1 - this.beta1)); // [..shape]
          const v1 = tf.add(tf.mul(v, this.beta2), tf.mul(tf.square(grad), 1 - this.beta2)); // [..shape]
          const denom = tf.add(tf.sqrt(tf.div(v1, bc2)), this.eps); // [..shape]
          const decayed = wd > 0 ? tf.mul(value, 1 - lr * wd) : value; // [..shape]
          const p1 = tf.sub(decayed, tf.mul(tf.div(m1, denom), lr / bc1)); // [..shape]
          m.assign(m1);
          v.assign(v1);
          value.assign(p1);
        });
      }
    }
    this.incrementIterations();
  }

  /** m and v of every variable seen so far (`<name>.exp_avg`, `<name>.exp_avg_sq`) and the step. */
  async exportState(): Promise<Map<string, NamedArray>> {
    const out = new Map<string, NamedArray>();
    out.set(STEP_KEY, { shape: [1], data: Float32Array.of(this.t) });
    for (const [name, { m, v }] of [...this.moments].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      out.set(name + M_SUFFIX, { shape: [...m.shape], data: (await m.data()) as Float32Array });
      out.set(name + V_SUFFIX, { shape: [...v.shape], data: (await v.data()) as Float32Array });
    }
    return out;
  }

  /** Replaces the state with an exported one; every moment must match a registered variable's size. */
  importState(state: ReadonlyMap<string, NamedArray>): void {
    const step = state.get(STEP_KEY);
    if (!step || step.data.length !== 1 || !Number.isInteger(step.data[0]) || (step.data[0] as number) < 0) {
      throw new Error(`AdamW.importState: missing or invalid '${STEP_KEY}' entry`);
    }
    const names = new Set<string>();
    for (const key of state.keys()) {
      if (key === STEP_KEY) continue;
      if (key.endsWith(V_SUFFIX)) names.add(key.slice(0, -V_SUFFIX.length));
      else if (key.endsWith(M_SUFFIX)) names.add(key.slice(0, -M_SUFFIX.length));
      else throw new Error(`AdamW.importState: unexpected entry '${key}'`);
    }
    const fresh = new Map<string, Moments>();
    try {
      for (const name of names) {
        const value = this.variable(name);
        const load = (key: string): tf.Variable => {
          const a = state.get(key);
          if (!a) throw new Error(`AdamW.importState: missing entry '${key}'`);
          if (a.data.length !== value.size) {
            throw new Error(
              `AdamW.importState: '${key}' has ${a.data.length} values, variable '${name}' has ${value.size}`,
            );
          }
          return tf.tidy(() => tf.variable(tf.tensor(a.data, value.shape, 'float32'), false));
        };
        fresh.set(name, { m: load(name + M_SUFFIX), v: load(name + V_SUFFIX) });
      }
    } catch (err) {
      for (const { m, v } of fresh.values()) tf.dispose([m, v]);
      throw err;
    }
    this.disposeMoments();
    this.moments = fresh;
    this.t = step.data[0] as number;
    this.iterations_ = this.t;
  }

  private disposeMoments(): void {
    for (const { m, v } of this.moments.values()) tf.dispose([m, v]);
    this.moments.clear();
  }

  override dispose(): void {
    this.disposeMoments();
  }

  override async getWeights(): Promise<NamedTensor[]> {
    const out: NamedTensor[] = [await this.saveIterations()];
    for (const [name, { m, v }] of this.moments)
      out.push({ name: name + M_SUFFIX, tensor: m }, { name: name + V_SUFFIX, tensor: v });
    return out;
  }

  override async setWeights(weightValues: NamedTensor[]): Promise<void> {
    const rest = await this.extractIterations(weightValues);
    const state = new Map<string, NamedArray>([[STEP_KEY, { shape: [1], data: Float32Array.of(this.iterations_) }]]);
    for (const { name, tensor } of rest)
      state.set(name, { shape: [...tensor.shape], data: (await tensor.data()) as Float32Array });
    this.importState(state);
  }

  getConfig(): tf.serialization.ConfigDict {
    return {
      learningRate: this.lr ?? null,
      beta1: this.beta1,
      beta2: this.beta2,
      epsilon: this.eps,
      weightDecay: this.weightDecay,
    };
  }
}
