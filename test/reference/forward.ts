import type { ModelConfig } from '../../src/model/config.ts';
import { EMBED, FINAL_NORM, LM_HEAD, layerNames } from '../../src/model/weight-map.ts';

/**
 * An independent float64 forward in plain JavaScript, written straight from the HF modeling code
 * (modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py) with loops instead of tensors:
 * HF-layout weights ([out, in] Linear), repeat_kv GQA, rotate_half RoPE. The tfjs decoder is
 * checked against it (after llm.c);
 * it shares nothing with the tfjs path but the config and the tensor names.
 */
export type HfWeights = ReadonlyMap<string, { shape: number[]; data: Float32Array }>;

type Vec = Float64Array;

function get(w: HfWeights, name: string): Float32Array {
  const t = w.get(name);
  if (!t) throw new Error(`reference: missing tensor '${name}'`);
  return t.data;
}

/** y = W x (+ b) with W [out, in] row-major. */
function linear(x: Vec, w: Float32Array, out: number, b?: Float32Array): Vec {
  const inp = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = b ? (b[o] as number) : 0;
    const base = o * inp;
    for (let i = 0; i < inp; i++) s += (w[base + i] as number) * (x[i] as number);
    y[o] = s;
  }
  return y;
}

function rms(x: Vec, g: Float32Array, eps: number, offset = 0, n = x.length): void {
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (x[offset + i] as number) ** 2;
  const r = 1 / Math.sqrt(ss / n + eps);
  for (let i = 0; i < n; i++) x[offset + i] = (x[offset + i] as number) * r * (g[i] as number);
}

/**
 * RoPE frequencies the reference applies: inv_freq [hd/2] and the cos/sin scale. Scaled variants
 * (linear, llama3, yarn) are passed in by the caller, computed by its own implementation of the
 * published formulas, so the reference never borrows the decoder's.
 */
export interface ReferenceRope {
  invFreq: ArrayLike<number>;
  attentionScaling: number;
}

/** rotate_half RoPE on one head slice x[offset .. offset+hd) at position pos. */
function rope(x: Vec, offset: number, hd: number, pos: number, r: ReferenceRope): void {
  const half = hd / 2;
  for (let j = 0; j < half; j++) {
    const ang = pos * (r.invFreq[j] as number);
    const c = Math.cos(ang) * r.attentionScaling;
    const s = Math.sin(ang) * r.attentionScaling;
    const a = x[offset + j] as number;
    const b = x[offset + j + half] as number;
    x[offset + j] = a * c - b * s;
    x[offset + j + half] = b * c + a * s;
  }
}

/** Plain RoPE theta^(-2j/d); a scaled config must bring its own frequencies. */
function plainRope(c: ModelConfig): ReferenceRope {
  if (c.rope.type !== 'default') throw new Error(`reference: rope_type '${c.rope.type}' needs explicit frequencies`);
  const hd = c.headDim;
  return {
    invFreq: Array.from({ length: hd / 2 }, (_, j) => 1 / Math.pow(c.rope.theta, (2 * j) / hd)),
    attentionScaling: 1,
  };
}

/** Logits [T][V] of one unpadded sequence. */
export function referenceLogits(c: ModelConfig, w: HfWeights, ids: number[], ropeIn?: ReferenceRope): Float64Array[] {
  const r = ropeIn ?? plainRope(c);
  const { hidden: D, heads: H, kvHeads: KV, headDim: hd, intermediate: I, vocabSize: V } = c;
  const emb = get(w, EMBED);
  let xs: Vec[] = ids.map((id) => Float64Array.from(emb.subarray(id * D, (id + 1) * D)));
  const opt = (name: string | undefined): Float32Array | undefined => (name === undefined ? undefined : get(w, name));
  for (let l = 0; l < c.layers; l++) {
    const n = layerNames(c, l);
    const ks: Vec[] = [];
    const vs: Vec[] = [];
    const qs: Vec[] = [];
    xs.forEach((x, t) => {
      const h = Float64Array.from(x);
      rms(h, get(w, n.inputNorm), c.rmsEps);
      const q = linear(h, get(w, n.q), H * hd, opt(n.qBias));
      const k = linear(h, get(w, n.k), KV * hd, opt(n.kBias));
      const v = linear(h, get(w, n.v), KV * hd, opt(n.vBias));
      for (let a = 0; a < H; a++) {
        if (n.qNorm) rms(q, get(w, n.qNorm), c.rmsEps, a * hd, hd);
        rope(q, a * hd, hd, t, r);
      }
      for (let a = 0; a < KV; a++) {
        if (n.kNorm) rms(k, get(w, n.kNorm), c.rmsEps, a * hd, hd);
        rope(k, a * hd, hd, t, r);
      }
      qs.push(q);
      ks.push(k);
      vs.push(v);
    });
    const next: Vec[] = [];
    xs.forEach((x, t) => {
      const ctx = new Float64Array(H * hd);
      for (let a = 0; a < H; a++) {
        const kvh = Math.floor(a / (H / KV)); // repeat_kv: head a reads kv head a / rep
        const scores = new Float64Array(t + 1);
        let max = -Infinity;
        for (let u = 0; u <= t; u++) {
          let s = 0;
          for (let i = 0; i < hd; i++) s += (qs[t] as Vec)[a * hd + i]! * (ks[u] as Vec)[kvh * hd + i]!;
          scores[u] = s / Math.sqrt(hd);
          max = Math.max(max, scores[u] as number);
        }
        let z = 0;
        for (let u = 0; u <= t; u++) z += scores[u] = Math.exp((scores[u] as number) - max);
        for (let u = 0; u <= t; u++)
          for (let i = 0; i < hd; i++)
            ctx[a * hd + i] = (ctx[a * hd + i] as number) + ((scores[u] as number) / z) * (vs[u] as Vec)[kvh * hd + i]!;
      }
      const o = linear(ctx, get(w, n.o), D, opt(n.oBias));
      const r = x.map((xi, i) => xi + (o[i] as number));
      const h = Float64Array.from(r);
      rms(h, get(w, n.postNorm), c.rmsEps);
      const g = linear(h, get(w, n.gate), I, opt(n.gateBias));
      const u = linear(h, get(w, n.up), I, opt(n.upBias));
      const act = g.map((gi, i) => (gi / (1 + Math.exp(-gi))) * (u[i] as number));
      const d = linear(act, get(w, n.down), D, opt(n.downBias));
      next.push(r.map((ri, i) => ri + (d[i] as number)));
    });
    xs = next;
  }
  const head = c.tieEmbeddings ? emb : get(w, LM_HEAD);
  return xs.map((x) => {
    const h = Float64Array.from(x);
    rms(h, get(w, FINAL_NORM), c.rmsEps);
    return linear(h, head, V);
  });
}
