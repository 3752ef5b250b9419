import * as tf from '@tensorflow/tfjs';

/**
 * Gradient accumulation over micro-batches. Each micro-batch
 * runs its own tf.variableGrads, so its activations and tape are freed before the next one starts:
 * peak memory is one micro-batch's forward + backward plus one gradient-sized buffer. Gradients are
 * summed in place into non-trainable accumulator Variables allocated once (assign, no new buffers),
 * so the tensor count stays flat across steps.
 *
 * The loss function returns its loss and detached scalar stats (the losses' `{loss, stats}` shape).
 * Stats are tf.keep'd out of the gradient scope and read back once per step in finish() with a single
 * host sync, not once per micro-batch. To make micro-batch losses SUM to the full-batch loss, pass
 * the full-batch normaliser to the loss (grpo-loss.ts fullBatchNormalizer).
 */
export interface LossWithStats {
  loss: tf.Scalar;
  stats: Record<string, tf.Scalar>;
}

export interface AccumulatedStep {
  /** Sum of the micro-batch losses (the full-batch loss when normalised as above). */
  loss: number;
  /** Loss of each micro-batch, in order. */
  losses: number[];
  /** Stats of each micro-batch, in order, as numbers. */
  stats: Record<string, number>[];
  /** Tag of each micro-batch (which loss it ran, when several are mixed in one update). */
  tags: string[];
  microBatches: number;
}

export class GradientAccumulator {
  private readonly vars: tf.Variable[];
  private readonly acc = new Map<string, tf.Variable>();
  private losses: tf.Scalar[] = [];
  private stats: Record<string, tf.Scalar>[] = [];
  private tags: string[] = [];

  constructor(vars: readonly tf.Variable[]) {
    if (vars.length === 0) throw new Error('GradientAccumulator: no variables');
    this.vars = [...vars];
    for (const v of this.vars) {
      if (this.acc.has(v.name)) throw new Error(`GradientAccumulator: variable name '${v.name}' appears twice`);
      // tidy frees the zeros tensor; the Variable (not tracked by tidy) keeps its own copy.
      this.acc.set(
        v.name,
        tf.tidy(() => tf.variable(tf.zerosLike(v), false)),
      );
    }
  }

  /** Runs one micro-batch's forward and backward and adds its gradients to the sums. */
  add(lossFn: () => LossWithStats, tag = 'loss'): void {
    let stats: Record<string, tf.Scalar> = {};
    const { value, grads } = tf.variableGrads(() => {
      const out = lossFn();
      // The gradient scope disposes everything but the loss: keep the stats for finish().
      for (const s of Object.values(out.stats)) tf.keep(s);
      stats = out.stats;
      return out.loss;
    }, this.vars);
    tf.tidy(() => {
      for (const [name, g] of Object.entries(grads)) {
        const a = this.acc.get(name) as tf.Variable;
        a.assign(tf.add(a, g)); // in place: the accumulator keeps its buffer identity
      }
    });
    tf.dispose(grads);
    this.losses.push(value);
    this.stats.push(stats);
    this.tags.push(tag);
  }

  /** The summed gradients, keyed by variable name (owned by the accumulator: do not dispose). */
  grads(): tf.NamedTensorMap {
    return Object.fromEntries(this.acc);
  }

  /** Reads the losses and stats of the micro-batches since the last reset (one host sync) and frees them. */
  finish(): AccumulatedStep {
    const keys = this.stats.map((s) => Object.keys(s));
    const flat = [...this.losses, ...this.stats.flatMap((s) => Object.values(s))];
    const values = flat.length === 0 ? new Float32Array(0) : tf.tidy(() => tf.stack(flat).dataSync() as Float32Array);
    let k = this.losses.length;
    const losses = Array.from(values.subarray(0, k));
    const loss = losses.reduce((s, x) => s + x, 0);
    const stats = keys.map((names) => Object.fromEntries(names.map((n) => [n, values[k++] as number])));
    const out = { loss, losses, stats, tags: this.tags, microBatches: this.losses.length };
    tf.dispose(flat);
    this.losses = [];
    this.stats = [];
    this.tags = [];
    return out;
  }

  /** Multiplies every gradient sum by `factor` (global-norm clipping), one buffer at a time. */
  scale(factor: number): void {
    for (const a of this.acc.values()) tf.tidy(() => a.assign(tf.mul(a, factor)));
  }

  /** Zeroes the gradient sums for the next update (and drops unread stats). */
  reset(): void {
    tf.dispose([...this.losses, ...this.stats.flatMap((s) => Object.values(s))]);
    this.losses = [];
    this.stats = [];
    this.tags = [];
    tf.tidy(() => {
      for (const a of this.acc.values()) a.assign(tf.zerosLike(a));
    });
  }

  dispose(): void {
    this.reset();
    for (const a of this.acc.values()) a.dispose();
    this.acc.clear();
  }
}
