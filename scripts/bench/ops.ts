import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { hfConfigFor } from '../../src/model/config.ts';
import { tokenLogprobs } from '../../src/model/logprobs.ts';
import { embed } from '../../src/model/ops/embedding.ts';
import { bmm, linear, matmulBT } from '../../src/model/ops/linear.ts';
import { selectedLogprobs } from '../../src/model/ops/logprobs.ts';
import { Rng } from '../../src/random/rng.ts';
import { BENCH_MODEL } from './model.ts';
import type { BenchRow } from './types.ts';
import { median } from './median.ts';

/**
 * Ops section of `npm run bench`: each custom-gradient op of src/model/ops alone, at the shapes one
 * train step of the model section runs it (8 x 64 = 512 tokens, hidden 128, 4 heads of 32,
 * intermediate 344, vocab 2000): the forward without a tape, and forward + backward through
 * tf.grads with a fixed upstream gradient; backward = the difference of the two medians. One
 * decoder block is the train step's forward + backward with 2 layers minus that with 1 layer.
 * Each time is given as wall and as the main thread's CPU time (Linux /proc schedstat; process CPU
 * elsewhere): on the shared 2 cores here wall time also measures the neighbours, and process CPU
 * counts the OpenBLAS helper threads' spinning, which grows with the load.
 */
const N = 512;
const B = 8;
const T = 64;

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;

/** CPU ms of the main thread so far (its run time from schedstat), else of the whole process. */
function mainThreadMs(): number {
  try {
    return Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  }
}

interface Ms {
  wall: number;
  cpu: number;
}

/**
 * Median wall ms of `f` over `reps` runs after two warm-ups, and the main thread's mean CPU ms over
 * those runs (schedstat advances in scheduler ticks, too coarse for one sub-millisecond call);
 * f's tensors are read back and freed.
 */
async function timeMedian(f: () => tf.Tensor[], reps: number): Promise<Ms> {
  const wall: number[] = [];
  let c0 = 0;
  for (let i = 0; i < reps + 2; i++) {
    if (i === 2) c0 = mainThreadMs();
    const t0 = performance.now();
    const ts = f();
    for (const t of ts) await t.data();
    const w = performance.now() - t0;
    tf.dispose(ts);
    if (i >= 2) wall.push(w);
  }
  return { wall: median(wall), cpu: (mainThreadMs() - c0) / reps };
}

/** b - a per field, floored at 0 (a difference of medians). */
const minus = (b: Ms, a: Ms): Ms => ({ wall: Math.max(0, b.wall - a.wall), cpu: Math.max(0, b.cpu - a.cpu) });

function msRows(metric: string, m: Ms): BenchRow[] {
  return [
    { section: 'ops', metric, value: m.wall, unit: 'ms' },
    { section: 'ops', metric: `${metric}, main-thread CPU`, value: m.cpu, unit: 'ms' },
  ];
}

interface OpCase {
  name: string;
  inputs: tf.Tensor[];
  /** The op on `inputs`; its gradient is taken with respect to the float inputs. */
  op: (xs: tf.Tensor[]) => tf.Tensor;
  /** Indices of the inputs that get a gradient (int ids get none). */
  grad: number[];
}

function cases(rng: Rng): OpCase[] {
  const r = (shape: number[]): tf.Tensor =>
    tf.tensor(
      Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.float() - 0.5),
      shape,
      'float32',
    );
  const ids = (n: number, v: number): tf.Tensor =>
    tf.tensor1d(
      Array.from({ length: n }, () => rng.int(0, v - 1)),
      'int32',
    );
  const { hidden: d, intermediate: ff, vocab: v, heads: h } = BENCH_MODEL;
  const hd = d / h;
  return [
    {
      name: `linear [${N},${d}]x[${d},${d}] (q/k/v/o)`,
      inputs: [r([N, d]), r([d, d])],
      op: ([x, w]) => linear(x as tf.Tensor2D, w as tf.Tensor2D),
      grad: [0, 1],
    },
    {
      name: `linear [${N},${d}]x[${d},${ff}] (gate/up)`,
      inputs: [r([N, d]), r([d, ff])],
      op: ([x, w]) => linear(x as tf.Tensor2D, w as tf.Tensor2D),
      grad: [0, 1],
    },
    {
      name: `linear [${N},${ff}]x[${ff},${d}] (down)`,
      inputs: [r([N, ff]), r([ff, d])],
      op: ([x, w]) => linear(x as tf.Tensor2D, w as tf.Tensor2D),
      grad: [0, 1],
    },
    {
      name: `matmulBT [${N},${d}]x[${v},${d}]^T (tied head)`,
      inputs: [r([N, d]), r([v, d])],
      op: ([x, w]) => matmulBT(x as tf.Tensor2D, w as tf.Tensor2D),
      grad: [0, 1],
    },
    {
      name: `bmm [${B * h},${T},${hd}]x[${B * h},${hd},${T}] (scores)`,
      inputs: [r([B * h, T, hd]), r([B * h, hd, T])],
      op: ([a, b]) => bmm(a as tf.Tensor3D, b as tf.Tensor3D),
      grad: [0, 1],
    },
    {
      name: `bmm [${B * h},${T},${T}]x[${B * h},${T},${hd}] (mixing)`,
      inputs: [r([B * h, T, T]), r([B * h, T, hd])],
      op: ([a, b]) => bmm(a as tf.Tensor3D, b as tf.Tensor3D),
      grad: [0, 1],
    },
    {
      name: `embed [${v},${d}] at ${N} ids`,
      inputs: [r([v, d]), ids(N, v)],
      op: ([t, i]) => embed(t as tf.Tensor2D, i as tf.Tensor1D),
      grad: [0],
    },
    {
      name: `selectedLogprobs [${N},${v}]`,
      inputs: [r([N, v]), ids(N, v)],
      op: ([l, i]) => selectedLogprobs(l as tf.Tensor2D, i as tf.Tensor1D),
      grad: [0],
    },
  ];
}

/** Forward and backward ms of one op case. */
async function timeCase(c: OpCase, reps: number): Promise<{ fwd: Ms; bwd: Ms }> {
  const out = c.op(c.inputs);
  const dy = tf.onesLike(out); // fixed upstream gradient, the op's output shape
  out.dispose();
  const fwd = await timeMedian(() => [c.op(c.inputs)], reps);
  const both = await timeMedian(() => {
    const g = tf.grads((...xs: tf.Tensor[]) =>
      c.op(c.inputs.map((t, i) => (c.grad.includes(i) ? (xs[c.grad.indexOf(i)] as tf.Tensor) : t))),
    );
    return g(
      c.grad.map((i) => c.inputs[i] as tf.Tensor),
      dy,
    );
  }, reps);
  dy.dispose();
  return { fwd, bwd: minus(both, fwd) };
}

/** Ms of the train step's forward and forward + backward (no optimizer) with `layers` decoder blocks. */
async function stepOf(layers: number, reps: number): Promise<{ fwd: Ms; bwd: Ms }> {
  const model = CausalLM.random(hfConfigFor({ ...BENCH_MODEL, layers }), 0);
  const rng = new Rng(1);
  const ids = tf.tensor2d(
    Array.from({ length: B * T }, () => rng.int(0, BENCH_MODEL.vocab - 1)),
    [B, T],
    'int32',
  ); // [B, T]
  const mask = tf.ones([B, T], 'int32') as tf.Tensor2D; // [B, T]
  const loss = (): tf.Scalar => tf.neg(tf.mean(tokenLogprobs(model, ids, mask))) as tf.Scalar;
  try {
    const fwd = await timeMedian(() => [loss()], reps);
    const both = await timeMedian(() => {
      const { value, grads } = tf.variableGrads(loss, model.trainableVariables());
      return [value, ...Object.values(grads)];
    }, reps);
    return { fwd, bwd: minus(both, fwd) };
  } finally {
    tf.dispose([ids, mask]);
    model.dispose();
  }
}

export async function benchOps(quick = false): Promise<BenchRow[]> {
  const reps = quick ? 1 : 40;
  const rng = new Rng(5);
  const rows: BenchRow[] = [];
  for (const c of cases(rng)) {
    try {
      const { fwd, bwd } = await timeCase(c, reps);
      rows.push(...msRows(`${c.name} forward`, fwd), ...msRows(`${c.name} backward`, bwd));
    } finally {
      tf.dispose(c.inputs);
    }
  }
  const [one, two] = [await stepOf(1, reps), await stepOf(2, reps)];
  rows.push(
    ...msRows(`decoder block [${B}x${T}] forward (2 layers - 1)`, minus(two.fwd, one.fwd)),
    ...msRows(`decoder block [${B}x${T}] backward (2 layers - 1)`, minus(two.bwd, one.bwd)),
    ...msRows('train step forward, 2 layers (no optimizer)', two.fwd),
    ...msRows('train step backward, 2 layers', two.bwd),
  );
  return rows;
}
