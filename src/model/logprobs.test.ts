import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from './causal-lm.ts';
import { hfConfigFor, type BuildOptions } from './config.ts';
import { keptRows, tokenLogprobs, tokenStats } from './logprobs.ts';
import { testBackend } from '../../test/backend.ts';

const QWEN3: BuildOptions = {
  arch: 'qwen3',
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 2,
  intermediate: 96,
  vocab: 61,
  tieEmbeddings: false,
};
const QWEN2: BuildOptions = {
  arch: 'qwen2',
  layers: 2,
  hidden: 64,
  heads: 4,
  kvHeads: 2,
  intermediate: 96,
  vocab: 61,
  tieEmbeddings: true,
};

beforeAll(async () => {
  await initBackend(testBackend());
});

const IDS = [
  [0, 0, 5, 8, 13, 21, 34, 55], // left-padded
  [1, 2, 3, 4, 5, 6, 0, 0], // right-padded
];
const MASK = [
  [0, 0, 1, 1, 1, 1, 1, 1],
  [1, 1, 1, 1, 1, 1, 0, 0],
];

describe('tokenLogprobs', () => {
  it('equals log_softmax(forward) gathered at the next token, 0 at padded targets', () => {
    const m = CausalLM.random(hfConfigFor(QWEN3), 1);
    tf.tidy(() => {
      const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
      const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
      const got = tokenLogprobs(m, ids, mask).arraySync(); // [2, 7]
      const ls = tf.logSoftmax(m.forward(ids, mask)).arraySync(); // [2, 8, V]
      for (let b = 0; b < 2; b++) {
        for (let t = 0; t < 7; t++) {
          const want = MASK[b]?.[t + 1] ? (ls[b]?.[t]?.[IDS[b]?.[t + 1] as number] as number) : 0;
          expect(Math.abs((got[b]?.[t] as number) - want)).toBeLessThan(1e-5);
        }
      }
      // Random init is near uniform: log p ~ -ln 61 = -4.11.
      expect(got[0]?.[3]).toBeGreaterThan(-4.5);
      expect(got[0]?.[3]).toBeLessThan(-3.7);
      const ent = tokenStats(m, ids, mask, true).entropy?.arraySync() ?? [];
      expect(ent[0]?.[3]).toBeGreaterThan(4.0); // near ln 61 = 4.11
      expect(ent[0]?.[3]).toBeLessThanOrEqual(Math.log(61) + 1e-4);
    });
    m.dispose();
  });

  for (const o of [QWEN3, QWEN2]) {
    it(`${o.arch}: every trainable variable gets a nonzero gradient`, () => {
      const m = CausalLM.random(hfConfigFor(o), 2);
      tf.tidy(() => {
        const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
        const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
        const { grads } = tf.variableGrads(
          () => tf.neg(tf.mean(tokenLogprobs(m, ids, mask))) as tf.Scalar,
          m.trainableVariables(),
        );
        for (const v of m.trainableVariables()) {
          const g = grads[v.name];
          expect(g, v.name).toBeDefined();
          expect(g?.shape).toEqual(v.shape);
          expect(tf.max(tf.abs(g as tf.Tensor)).dataSync()[0], v.name).toBeGreaterThan(0);
        }
      });
      m.dispose();
    });
  }
});

describe('training step', () => {
  it('50 Adam steps: tensor count flat, loss on a memorised batch falls by > 2 nats', () => {
    const m = CausalLM.random(hfConfigFor(QWEN3), 3);
    const opt = tf.train.adam(3e-3);
    const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
    const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
    const losses: number[] = [];
    let count = -1;
    for (let step = 0; step < 50; step++) {
      const loss = opt.minimize(
        () => tf.neg(tf.div(tf.sum(tokenLogprobs(m, ids, mask)), 11)) as tf.Scalar,
        true,
        m.trainableVariables(),
      ); // 11 real targets
      losses.push(loss?.dataSync()[0] as number);
      loss?.dispose();
      // Adam creates its moment Variables in step 1; from step 2 on the count must not move.
      if (step === 1) count = tf.memory().numTensors;
      if (step > 1) expect(tf.memory().numTensors).toBe(count);
    }
    expect(losses[0]).toBeGreaterThan(3.5); // ~ ln 61
    expect((losses[0] as number) - (losses[49] as number)).toBeGreaterThan(2);
    opt.dispose();
    tf.dispose([ids, mask]);
    m.dispose();
  });
});

/** Log-probs [B, T-1], entropy and the gradient of a weighted sum of log-probs w.r.t. every trainable variable. */
function statsAndGrads(m: CausalLM): { lp: Float32Array; ent: Float32Array; grads: Map<string, Float32Array> } {
  let out: { lp: Float32Array; ent: Float32Array; grads: Map<string, Float32Array> } | undefined;
  tf.tidy(() => {
    const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
    const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
    const st = tokenStats(m, ids, mask, true);
    const lp = st.logprobs.dataSync() as Float32Array;
    const ent = st.entropy?.dataSync() as Float32Array;
    // Unequal weights per position, so a chunk boundary that mixed rows up would show.
    const wts = tf.tensor2d(
      Array.from({ length: 14 }, (_, i) => 1 + i / 7),
      [2, 7],
    );
    const { grads } = tf.variableGrads(
      () => tf.neg(tf.sum(tf.mul(tokenLogprobs(m, ids, mask), wts))) as tf.Scalar,
      m.trainableVariables(),
    );
    const byName = new Map(
      [...m.namedVariables()].map(([name, v]) => [name, (grads[v.name] as tf.Tensor).dataSync() as Float32Array]),
    );
    out = { lp, ent, grads: byName };
  });
  return out as { lp: Float32Array; ent: Float32Array; grads: Map<string, Float32Array> };
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs((a[i] as number) - (b[i] as number)));
  return d;
}

describe('memory-lean training forward', () => {
  const cases: [string, BuildOptions, boolean][] = [
    ['qwen3 untied head', QWEN3, false],
    ['qwen2 tied head', QWEN2, false],
    ['qwen3 with LoRA (frozen head)', QWEN3, true],
  ];
  for (const [name, o, lora] of cases) {
    it(
      `${name}: chunked log-probs (3 rows a chunk) and layer checkpointing give the unchunked values and ` +
        `gradients (1e-5)`,
      () => {
        const m = CausalLM.random(hfConfigFor(o), 8);
        if (lora) {
          m.attachLora(
            { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'] },
            3,
          );
          for (const [n, v] of m.namedVariables())
            if (n.endsWith('lora_B.weight'))
              tf.tidy(() => v.assign(tf.mul(tf.randomNormal(v.shape, 0, 1, 'float32', 5), 0.1)));
        }
        const plain = statsAndGrads(m);
        const count = tf.memory().numTensors;
        for (const memory of [
          { logprobChunk: 3, checkpointLayers: false },
          { logprobChunk: 0, checkpointLayers: true },
          { logprobChunk: 5, checkpointLayers: true },
        ]) {
          m.memory = memory;
          const got = statsAndGrads(m);
          expect(maxDiff(got.lp, plain.lp), JSON.stringify(memory)).toBeLessThan(1e-5);
          expect(maxDiff(got.ent, plain.ent), JSON.stringify(memory)).toBeLessThan(1e-5);
          expect(got.grads.size).toBe(plain.grads.size);
          for (const [n, g] of plain.grads) {
            const scale = Math.max(1, ...Array.from(g, Math.abs));
            expect(maxDiff(got.grads.get(n) as Float32Array, g) / scale, `${n} ${JSON.stringify(memory)}`).toBeLessThan(
              1e-5,
            );
          }
          expect(tf.memory().numTensors).toBe(count); // nothing leaks from the custom gradients
        }
        // The gradients are not all zero (the comparison would then be empty).
        expect(Math.max(...[...plain.grads.values()].map((g) => Math.max(...Array.from(g, Math.abs))))).toBeGreaterThan(
          1e-3,
        );
        m.dispose();
      },
    );
  }
});

describe('the head at kept positions only (keep)', () => {
  // Kept positions spread through both rows, on left and right padding; [1, 6] targets padding (0 either way).
  const KEEP = [
    [0, 0, 1, 0, 1, 1, 0],
    [1, 0, 0, 1, 0, 0, 1],
  ];
  /** Log-probs, entropy and gradients of a weighted sum of kept log-probs, with or without `keep`. */
  function keptStats(
    m: CausalLM,
    withKeep: boolean,
    keepRows = KEEP,
  ): { lp: Float32Array; ent: Float32Array; grads: Map<string, Float32Array> } {
    let out: { lp: Float32Array; ent: Float32Array; grads: Map<string, Float32Array> } | undefined;
    tf.tidy(() => {
      const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
      const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
      const keep = tf.tensor2d(keepRows.flat(), [2, 7]); // [2, 7]
      const k = withKeep ? keep : undefined;
      const st = tokenStats(m, ids, mask, true, k);
      // Unkept entries carry no loss: the masked values of both paths are compared.
      const lp = tf.mul(st.logprobs, keep).dataSync() as Float32Array;
      const ent = tf.mul(st.entropy as tf.Tensor2D, keep).dataSync() as Float32Array;
      const wts = tf.mul(
        tf.tensor2d(
          Array.from({ length: 14 }, (_, i) => 1 + i / 7),
          [2, 7],
        ),
        keep,
      ); // [2, 7]
      const { grads } = tf.variableGrads(
        () => tf.neg(tf.sum(tf.mul(tokenLogprobs(m, ids, mask, k), wts))) as tf.Scalar,
        m.trainableVariables(),
      );
      const byName = new Map(
        [...m.namedVariables()].map(([name, v]) => [name, (grads[v.name] as tf.Tensor).dataSync() as Float32Array]),
      );
      out = { lp, ent, grads: byName };
    });
    return out as { lp: Float32Array; ent: Float32Array; grads: Map<string, Float32Array> };
  }

  const cases: [string, BuildOptions, boolean][] = [
    ['qwen3 untied head', QWEN3, false],
    ['qwen2 tied head', QWEN2, false],
    ['qwen3 with LoRA (frozen head)', QWEN3, true],
  ];
  for (const [name, o, lora] of cases) {
    it(`${name}: the same masked values and gradients as the head on every position (1e-5), chunked or not`, () => {
      const m = CausalLM.random(hfConfigFor(o), 9);
      if (lora) {
        m.attachLora(
          { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'] },
          3,
        );
        for (const [n, v] of m.namedVariables())
          if (n.endsWith('lora_B.weight'))
            tf.tidy(() => v.assign(tf.mul(tf.randomNormal(v.shape, 0, 1, 'float32', 5), 0.1)));
      }
      for (const memory of [
        { logprobChunk: 0, checkpointLayers: false },
        { logprobChunk: 2, checkpointLayers: true },
      ]) {
        m.memory = memory;
        const all = keptStats(m, false);
        const count = tf.memory().numTensors;
        const got = keptStats(m, true);
        expect(tf.memory().numTensors).toBe(count); // nothing leaks
        expect(maxDiff(got.lp, all.lp)).toBeLessThan(1e-5);
        expect(maxDiff(got.ent, all.ent)).toBeLessThan(1e-5);
        expect(Math.max(...Array.from(all.lp, Math.abs))).toBeGreaterThan(1); // kept values are real log-probs
        expect(got.grads.size).toBe(all.grads.size);
        for (const [n, g] of all.grads) {
          const scale = Math.max(1, ...Array.from(g, Math.abs));
          expect(maxDiff(got.grads.get(n) as Float32Array, g) / scale, `${n} ${JSON.stringify(memory)}`).toBeLessThan(
            1e-5,
          );
        }
        expect(Math.max(...[...all.grads.values()].map((g) => Math.max(...Array.from(g, Math.abs))))).toBeGreaterThan(
          1e-3,
        );
      }
      m.dispose();
    });
  }

  it('is 0 at every unkept position, and a keep of zeros gives zeros and zero gradients', () => {
    const m = CausalLM.random(hfConfigFor(QWEN3), 10);
    tf.tidy(() => {
      const ids = tf.tensor2d(IDS.flat(), [2, 8], 'int32');
      const mask = tf.tensor2d(MASK.flat(), [2, 8], 'int32');
      const lp = tokenLogprobs(m, ids, mask, tf.tensor2d(KEEP.flat(), [2, 7])).arraySync();
      KEEP.forEach((row, b) =>
        row.forEach((k, t) =>
          k && MASK[b]?.[t + 1] ? expect(lp[b]?.[t]).toBeLessThan(-1) : expect(Math.abs(lp[b]?.[t] as number)).toBe(0),
        ),
      );
      const none = tf.zeros([2, 7]) as tf.Tensor2D;
      expect(Array.from(tokenLogprobs(m, ids, mask, none).dataSync(), Math.abs)).toEqual(new Array(14).fill(0));
      const { grads } = tf.variableGrads(
        () => tf.neg(tf.sum(tokenLogprobs(m, ids, mask, none))) as tf.Scalar,
        m.trainableVariables(),
      );
      for (const g of Object.values(grads)) expect(tf.max(tf.abs(g)).dataSync()[0]).toBe(0);
    });
    m.dispose();
  });

  it('keptRows: source rows, target ids and where each position reads its value', () => {
    const r = keptRows([0, 1, 0, 1, 1, 0], 2, 4); // B 2, T 4: positions (0,1), (1,0), (1,1)
    expect(Array.from(r.src)).toEqual([1, 4, 5]); // rows of h [B*T, D]
    expect(Array.from(r.target)).toEqual([2, 5, 6]); // ids [B*T]
    expect(Array.from(r.spread)).toEqual([3, 0, 3, 1, 2, 3]); // 3 = the appended 0
    const none = keptRows([0, 0], 1, 3);
    expect(Array.from(none.src)).toEqual([0]);
    expect(Array.from(none.spread)).toEqual([1, 1]);
  });
});
