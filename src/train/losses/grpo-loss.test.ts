import { describe, it, expect, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../backend/select.ts';
import {
  aggregate,
  fullBatchNormalizer,
  grpoLoss,
  grpoMetrics,
  stopGradient,
  type GrpoOptions,
  type GrpoInputs,
} from './grpo-loss.ts';

beforeAll(async () => {
  await initBackend('wasm');
});

// The hand-computed case used throughout (eps_low = eps_high = 0.2):
// row 0: A = +1, ratios [1.0, 1.5, 0.5], mask [1, 1, 1]
//   l = -min(r A, clip(r) A): r=1 -> -1; r=1.5 -> -min(1.5, 1.2) = -1.2 (clipped high); r=0.5 -> -0.5
// row 1: A = -2, ratios [0.5, 1.5, 3.0], mask [1, 1, 0]
//   r=0.5 -> -min(-1, -1.6) = 1.6 (clipped low); r=1.5 -> -min(-3, -2.4) = 3; r=3.0 masked out
// sums: row 0 = -2.7 over 3 tokens, row 1 = 4.6 over 2 tokens; 5 tokens in all
const ratios = [
  [1.0, 1.5, 0.5],
  [0.5, 1.5, 3.0],
];
const logpRows = [
  [-0.3, -1.2, -2.0],
  [-0.7, -0.1, -1.5],
];
const oldRows = logpRows.map((row, b) => row.map((lp, t) => lp - Math.log(ratios[b][t])));

function inputs(extra: Partial<GrpoInputs> = {}): GrpoInputs {
  return {
    logp: tf.tensor2d(logpRows),
    oldLogp: tf.tensor2d(oldRows),
    adv: tf.tensor1d([1, -2]),
    mask: tf.tensor2d([
      [1, 1, 1],
      [1, 1, 0],
    ]),
    ...extra,
  };
}

const base: GrpoOptions = { clipLow: 0.2, clipHigh: 0.2, beta: 0, aggregation: 'token-mean' };
const num = (t: tf.Tensor): number => t.dataSync()[0] as number;

describe('grpoLoss values (hand-computed)', () => {
  it('token-mean: (-2.7 + 4.6) / 5 = 0.38, with stats', () => {
    const { loss, stats } = grpoLoss(inputs(), base);
    expect(num(loss)).toBeCloseTo(0.38, 5);
    expect(num(stats['batch/tokens'])).toBe(5);
    expect(num(stats['losses/clipfrac_high'])).toBeCloseTo(0.2, 6); // 1 of 5 (row 0, r = 1.5, A > 0)
    expect(num(stats['losses/clipfrac_low'])).toBeCloseTo(0.2, 6); // 1 of 5 (row 1, r = 0.5, A < 0)
    // (r - 1) - ln r: 0, 0.0945349, 0.1931472, 0.1931472, 0.0945349 -> sum 0.5753642 / 5 = 0.1150728
    expect(num(stats['losses/approx_kl'])).toBeCloseTo(0.1150728, 5);
    expect(num(stats['losses/ratio_min'])).toBeCloseTo(0.5, 6);
    expect(num(stats['losses/ratio_max'])).toBeCloseTo(1.5, 6); // the masked 3.0 is ignored
  });

  it('seq-mean-token-mean: (-2.7/3 + 4.6/2) / 2 = 0.7', () => {
    expect(num(grpoLoss(inputs(), { ...base, aggregation: 'seq-mean-token-mean' }).loss)).toBeCloseTo(0.7, 5);
  });

  it('seq-mean-token-sum-norm (Dr. GRPO, maxLen 4): (-2.7/4 + 4.6/4) / 2 = 0.2375', () => {
    expect(num(grpoLoss(inputs(), { ...base, aggregation: 'seq-mean-token-sum-norm', maxLen: 4 }).loss)).toBeCloseTo(
      0.2375,
      5,
    );
    // default maxLen = T = 3: (-0.9 + 4.6/3) / 2 = 0.3166667
    expect(num(grpoLoss(inputs(), { ...base, aggregation: 'seq-mean-token-sum-norm' }).loss)).toBeCloseTo(0.3166667, 5);
  });

  it('asymmetric clip (DAPO eps_high 0.6): row 0 r=1.5 is no longer clipped', () => {
    // token 2 becomes -min(1.5, 1.5) = -1.5: (-1 - 1.5 - 0.5 + 1.6 + 3) / 5 = 0.32
    const { loss, stats } = grpoLoss(inputs(), { ...base, clipHigh: 0.6 });
    expect(num(loss)).toBeCloseTo(0.32, 5);
    expect(num(stats['losses/clipfrac_high'])).toBe(0);
  });

  it('per-token advantages [B, T] equal the broadcast [B] form', () => {
    const adv = tf.tensor2d([
      [1, 1, 1],
      [-2, -2, -2],
    ]);
    expect(num(grpoLoss(inputs({ adv }), base).loss)).toBeCloseTo(0.38, 5);
  });

  it('adds beta * k3 KL when beta > 0, and logs entropy', () => {
    // ref - logp: row 0 [0, ln 2, 0], row 1 [0, 0, 5 (masked)]; k3(ln 2) = 2 - ln 2 - 1 = 0.3068528
    const d = [
      [0, Math.log(2), 0],
      [0, 0, 5],
    ];
    const refLogp = tf.tensor2d(logpRows.map((row, b) => row.map((lp, t) => lp + d[b][t])));
    const entropy = tf.tensor2d([
      [1, 2, 3],
      [4, 5, 100],
    ]);
    const { loss, stats } = grpoLoss(inputs({ refLogp, entropy }), { ...base, beta: 0.5 });
    // 0.38 + 0.5 * 0.3068528 / 5 = 0.4106853
    expect(num(loss)).toBeCloseTo(0.4106853, 5);
    expect(num(stats['losses/ref_kl'] as tf.Scalar)).toBeCloseTo(0.3068528 / 5, 6);
    expect(num(stats['losses/entropy'] as tf.Scalar)).toBeCloseTo(3, 6); // (1+2+3+4+5) / 5
    // beta = 0 holds no reference: refLogp is ignored and refKl absent
    const r0 = grpoLoss(inputs({ refLogp }), base);
    expect(num(r0.loss)).toBeCloseTo(0.38, 5);
    expect(r0.stats['losses/ref_kl']).toBeUndefined();
  });

  it('micro-batches with the full-batch normalizer sum to the full-batch loss, for every aggregation', () => {
    for (const aggregation of ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const) {
      const full = num(grpoLoss(inputs(), { ...base, aggregation, maxLen: 4 }).loss);
      const normalizer = fullBatchNormalizer(aggregation, [3, 2]);
      const parts = [0, 1].map((b) => {
        const i = inputs();
        const row = (t: tf.Tensor2D): tf.Tensor2D => tf.slice(t, [b, 0], [1, -1]);
        return grpoLoss(
          {
            logp: row(i.logp),
            oldLogp: row(i.oldLogp),
            adv: tf.slice(i.adv as tf.Tensor1D, [b], [1]),
            mask: row(i.mask),
          },
          { ...base, aggregation, maxLen: 4, normalizer },
        );
      });
      expect(num(parts[0].loss) + num(parts[1].loss)).toBeCloseTo(full, 5);
      const merged = grpoMetrics(
        parts.map((p) => Object.fromEntries(Object.entries(p.stats).map(([k, v]) => [k, num(v)]))),
      );
      expect(merged['batch/tokens']).toBe(5);
      expect(merged['losses/clipfrac_low']).toBeCloseTo(0.2, 6);
      expect(merged['losses/clipfrac']).toBeCloseTo(0.4, 6);
      expect(merged['losses/ratio_max']).toBeCloseTo(1.5, 6);
    }
  });

  it('rejects mismatched shapes and a missing reference with one-line errors', () => {
    expect(() => grpoLoss(inputs({ mask: tf.ones([2, 4]) as tf.Tensor2D }), base)).toThrow(
      'grpoLoss: mask has shape [2, 4], expected [2, 3]',
    );
    expect(() => grpoLoss(inputs({ adv: tf.ones([3]) as tf.Tensor1D }), base)).toThrow(
      'grpoLoss: adv has shape [3], expected [2]',
    );
    expect(() => grpoLoss(inputs(), { ...base, beta: 0.1 })).toThrow('grpoLoss: beta > 0 needs refLogp');
  });

  it('creates no lasting tensors beyond its outputs', () => {
    const i = inputs();
    const before = tf.memory().numTensors;
    const { loss, stats } = grpoLoss(i, { ...base, beta: 0 });
    const outputs = 1 + Object.keys(stats).length;
    expect(tf.memory().numTensors - before).toBe(outputs);
    tf.dispose([loss, stats]);
  });
});

describe('grpoLoss gradient vs finite differences', () => {
  // A tiny parameterised policy: logits W [B, T, V]; logp = log_softmax(W) at the chosen tokens.
  const B = 2;
  const T = 3;
  const V = 4;
  const chosen = [
    [0, 2, 3],
    [1, 1, 0],
  ];
  const logpOf = (w: tf.Tensor3D): tf.Tensor2D =>
    tf.sum(tf.mul(tf.logSoftmax(w), tf.oneHot(tf.tensor2d(chosen, [B, T], 'int32'), V)), 2) as tf.Tensor2D; // [B, T]

  for (const aggregation of ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const) {
    it(`matches central differences (${aggregation}, beta 0.3, both clip sides active)`, () => {
      const w0 = Array.from({ length: B * T * V }, (_, k) => Math.sin(1.7 * k) * 0.8);
      const W = tf.variable(tf.tensor3d(w0, [B, T, V]));
      // old = logp(W0) + offsets: ratio = exp(-offset), kept >= 0.05 away from the clip edges 0.8 / 1.2
      // so that the finite-difference step never crosses a kink.
      const offsets = [
        [0.0, 0.5, -0.5], // A > 0: r = 1, 0.61 (unclipped side), 1.65 (clipped: zero grad)
        [0.5, -0.5, 0.1], // A < 0: r = 0.61 (clipped: zero grad), 1.65 (unclipped), 0.90
      ];
      const old = tf.tidy(() => tf.sub(logpOf(W), tf.tensor2d(offsets))) as tf.Tensor2D;
      const ref = tf.tidy(() =>
        tf.add(
          logpOf(W),
          tf.tensor2d([
            [0.3, -0.2, 0.1],
            [-0.4, 0.2, 0.0],
          ]),
        ),
      ) as tf.Tensor2D;
      const adv = tf.tensor1d([1.3, -0.7]);
      const mask = tf.tensor2d([
        [1, 1, 1],
        [1, 1, 0],
      ]);
      const opts: GrpoOptions = { ...base, beta: 0.3, aggregation, maxLen: 5 };
      const lossAt = (w: tf.Tensor3D): tf.Scalar =>
        grpoLoss({ logp: logpOf(w), oldLogp: old, adv, mask, refLogp: ref }, opts).loss;

      const { grads } = tf.variableGrads(() => lossAt(W), [W]);
      const g = Array.from(grads[W.name].dataSync());
      const h = 1e-2;
      const fd = w0.map((_, k) =>
        tf.tidy(() => {
          const at = (delta: number): number => {
            const w = w0.slice();
            w[k] += delta;
            return lossAt(tf.tensor3d(w, [B, T, V])).dataSync()[0] as number;
          };
          return (at(h) - at(-h)) / (2 * h);
        }),
      );
      // Float32 central differences with h = 1e-2: truncation O(h^2 f''') ~ 1e-4, rounding ~ 1e-5.
      for (let k = 0; k < g.length; k++) expect(Math.abs((g[k] as number) - (fd[k] as number))).toBeLessThan(5e-4);
      // Not vacuous: the gradient is clearly non-zero.
      expect(Math.max(...g.map(Math.abs))).toBeGreaterThan(0.05);
      tf.dispose([W, old, ref, adv, mask, grads[W.name]]);
    });
  }
});

describe('grpoLoss gradient on the tiny model (directional finite differences)', () => {
  it('matches d/dh L(theta + h d) for random directions d over every weight', async () => {
    const { CausalLM } = await import('../../model/causal-lm.ts');
    const { hfConfigFor } = await import('../../model/config.ts');
    const { tokenLogprobs } = await import('../../model/logprobs.ts');
    const { Rng } = await import('../../random/rng.ts');
    const model = CausalLM.random(
      hfConfigFor({ arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 96, vocab: 40 }),
      21,
    );
    const vars = model.trainableVariables();
    const ids = tf.tensor2d(
      [
        [1, 5, 9, 13, 2, 7, 30, 4],
        [3, 8, 21, 0, 11, 6, 6, 19],
      ],
      [2, 8],
      'int32',
    );
    const attn = tf.tensor2d(
      [
        [1, 1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 1, 0, 0],
      ],
      [2, 8],
      'int32',
    );
    const mask = tf.tensor2d([
      [0, 0, 1, 1, 1, 1, 1],
      [0, 1, 1, 1, 1, 0, 0],
    ]); // [2, 7]
    // ratios exp(-offset) in {0.61, 1.65, 0.95, 1.05, 1, 0.74, 1.35}: all >= 0.05 from the clip edges.
    const offs = [0.5, -0.5, 0.05, -0.05, 0.0, 0.3, -0.3];
    const offsets = tf.tensor2d(
      Array.from({ length: 14 }, (_, k) => offs[k % offs.length] as number),
      [2, 7],
    );
    const old = tf.tidy(() => tf.sub(tokenLogprobs(model, ids, attn), offsets)) as tf.Tensor2D;
    const ref = tf.tidy(() => tf.add(tokenLogprobs(model, ids, attn), 0.2)) as tf.Tensor2D;
    const adv = tf.tensor1d([0.9, -1.4]);
    const lossNow = (): tf.Scalar =>
      grpoLoss(
        { logp: tokenLogprobs(model, ids, attn), oldLogp: old, adv, mask, refLogp: ref },
        { ...base, beta: 0.2, clipHigh: 0.28 },
      ).loss;

    const { grads } = tf.variableGrads(lossNow, vars);
    const rng = new Rng(5);
    for (let trial = 0; trial < 2; trial++) {
      // A random unit direction over all parameters.
      const dir = vars.map((v) =>
        tf.tensor(
          Array.from({ length: v.size }, () => rng.float() - 0.5),
          v.shape,
          'float32',
        ),
      );
      const norm = Math.sqrt(
        dir.reduce((s, d) => s + (tf.tidy(() => tf.sum(tf.square(d)).dataSync()[0]) as number), 0),
      );
      const analytic = vars.reduce(
        (s, v, i) =>
          s + (tf.tidy(() => tf.sum(tf.mul(grads[v.name], dir[i] as tf.Tensor)).dataSync()[0]) as number) / norm,
        0,
      );
      const h = 1e-2;
      const at = (scale: number): number => {
        const saved = vars.map((v) => tf.clone(v));
        vars.forEach((v, i) => tf.tidy(() => v.assign(tf.add(v, tf.mul(dir[i] as tf.Tensor, scale / norm)))));
        const l = tf.tidy(() => lossNow().dataSync()[0] as number);
        vars.forEach((v, i) => v.assign(saved[i] as tf.Tensor));
        tf.dispose(saved);
        return l;
      };
      const fd = (at(h) - at(-h)) / (2 * h);
      // Float32 forward: FD noise ~1e-7 / 2e-2 = 5e-6; truncation O(h^2). Measured here: 0.0223875 vs
      // 0.0223878 and 0.0014413 vs 0.0014410 (FD vs analytic).
      expect(Math.abs(analytic)).toBeGreaterThan(1e-4);
      expect(Math.abs(fd - analytic)).toBeLessThan(5e-5 + 1e-2 * Math.abs(analytic));
      tf.dispose(dir);
    }
    tf.dispose([ids, attn, mask, offsets, old, ref, adv, ...Object.values(grads)]);
    model.dispose();
  });
});

// per-token [[1, 2, 3], [4, 5, 6]], mask [[1, 1, 0], [1, 0, 0]]: row sums 3 and 4, token counts 2 and 1
const perTok = () =>
  tf.tensor2d([
    [1, 2, 3],
    [4, 5, 6],
  ]);
const aggMask = () =>
  tf.tensor2d([
    [1, 1, 0],
    [1, 0, 0],
  ]);

describe('aggregate', () => {
  it('token-mean: (3 + 4) / 3 = 2.3333333', () =>
    expect(num(aggregate('token-mean', perTok(), aggMask()))).toBeCloseTo(7 / 3, 6));
  it('seq-mean-token-mean: (3/2 + 4/1) / 2 = 2.75', () =>
    expect(num(aggregate('seq-mean-token-mean', perTok(), aggMask()))).toBeCloseTo(2.75, 6));
  it('seq-mean-token-sum-norm, maxLen 4: (3/4 + 4/4) / 2 = 0.875', () =>
    expect(num(aggregate('seq-mean-token-sum-norm', perTok(), aggMask(), { maxLen: 4 }))).toBeCloseTo(0.875, 6));
  it('divides by an explicit full-batch normalizer', () =>
    expect(num(aggregate('token-mean', perTok(), aggMask(), { normalizer: 7 }))).toBeCloseTo(1, 6));
  it('full-batch normalizers: tokens for token-mean, sequences otherwise', () => {
    expect(fullBatchNormalizer('token-mean', [2, 1, 0])).toBe(3);
    expect(fullBatchNormalizer('seq-mean-token-mean', [2, 1, 0])).toBe(3);
    expect(fullBatchNormalizer('token-mean', [])).toBe(1);
  });
  it('rejects bad options with one line', () => {
    expect(() => aggregate('token-mean', perTok(), aggMask(), { normalizer: 0 })).toThrow('normalizer must be > 0');
    expect(() => aggregate('nope' as 'token-mean', perTok(), aggMask())).toThrow("unknown aggregation 'nope'");
  });
});

describe('stopGradient', () => {
  it('keeps the values and zeroes the gradient through it: d/dx sum(x * sg(x)) = x, not 2x', () => {
    const x = tf.tensor2d([
      [1, -2],
      [3, 0.5],
    ]); // [2, 2]
    const sg = stopGradient(x);
    expect(Array.from(sg.dataSync())).toEqual([1, -2, 3, 0.5]);
    const g = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(v, stopGradient(v))))(x); // [2, 2]
    expect(Array.from(g.dataSync())).toEqual([1, -2, 3, 0.5]);
    const r = tf.grad((v: tf.Tensor) => tf.sum(tf.exp(tf.sub(v, stopGradient(v)))))(x); // [2, 2] ratio 1, gradient 1
    expect(Array.from(r.dataSync())).toEqual([1, 1, 1, 1]);
    tf.dispose([x, sg, g, r]);
  });
});
