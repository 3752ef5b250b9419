import type { ModelConfig } from './config.ts';

/**
 * Declarative HF weight map (after torchtune's per-family key maps): every tensor
 * a family's checkpoint holds, its HF name, its HF shape, and how we store it.
 *
 * `linear` tensors are HF nn.Linear weights, [out, in] on disk; we keep them as [in, out] so the
 * forward is a plain `x @ W` with no transpose flag (a transposed matmul is
 * 10-25x slower on wasm). Loading and saving transpose once.
 */
type WeightKind = 'linear' | 'embedding' | 'vector';

export interface WeightSpec {
  /** Exact HF tensor name. */
  name: string;
  /** Shape as stored in the HF checkpoint. */
  hfShape: number[];
  kind: WeightKind;
  /** 'normal' = N(0, 0.02) (HF initializer_range), 'ones' (norm gains), 'zeros' (biases). */
  init: 'normal' | 'ones' | 'zeros';
}

/** Names of the per-layer tensors the decoder reads, in a fixed order (trainableVariables order). */
export interface LayerNames {
  inputNorm: string;
  q: string;
  k: string;
  v: string;
  o: string;
  qBias?: string;
  kBias?: string;
  vBias?: string;
  oBias?: string;
  qNorm?: string;
  kNorm?: string;
  postNorm: string;
  gate: string;
  up: string;
  down: string;
  gateBias?: string;
  upBias?: string;
  downBias?: string;
}

export const EMBED = 'model.embed_tokens.weight';
export const FINAL_NORM = 'model.norm.weight';
export const LM_HEAD = 'lm_head.weight';

/** The tensor names of layer i. Families differ only in which optional entries exist. */
export function layerNames(c: ModelConfig, i: number): LayerNames {
  const p = `model.layers.${i}`;
  const a = `${p}.self_attn`;
  const m = `${p}.mlp`;
  return {
    inputNorm: `${p}.input_layernorm.weight`,
    q: `${a}.q_proj.weight`,
    k: `${a}.k_proj.weight`,
    v: `${a}.v_proj.weight`,
    o: `${a}.o_proj.weight`,
    ...(c.qkvBias ? { qBias: `${a}.q_proj.bias`, kBias: `${a}.k_proj.bias`, vBias: `${a}.v_proj.bias` } : {}),
    ...(c.oBias ? { oBias: `${a}.o_proj.bias` } : {}),
    ...(c.qkNorm ? { qNorm: `${a}.q_norm.weight`, kNorm: `${a}.k_norm.weight` } : {}),
    postNorm: `${p}.post_attention_layernorm.weight`,
    gate: `${m}.gate_proj.weight`,
    up: `${m}.up_proj.weight`,
    down: `${m}.down_proj.weight`,
    ...(c.mlpBias
      ? { gateBias: `${m}.gate_proj.bias`, upBias: `${m}.up_proj.bias`, downBias: `${m}.down_proj.bias` }
      : {}),
  };
}

/** Every tensor of the model, in a stable order: embedding, layers 0..N-1, final norm, head. */
export function weightSpecs(c: ModelConfig): WeightSpec[] {
  const D = c.hidden;
  const qDim = c.heads * c.headDim;
  const kvDim = c.kvHeads * c.headDim;
  const I = c.intermediate;
  const specs: WeightSpec[] = [{ name: EMBED, hfShape: [c.vocabSize, D], kind: 'embedding', init: 'normal' }];
  const lin = (name: string, out: number, inp: number): WeightSpec => ({
    name,
    hfShape: [out, inp],
    kind: 'linear',
    init: 'normal',
  });
  const vec = (name: string | undefined, n: number, init: 'ones' | 'zeros'): WeightSpec[] =>
    name === undefined ? [] : [{ name, hfShape: [n], kind: 'vector', init }];
  for (let i = 0; i < c.layers; i++) {
    const n = layerNames(c, i);
    specs.push(
      ...vec(n.inputNorm, D, 'ones'),
      lin(n.q, qDim, D),
      ...vec(n.qBias, qDim, 'zeros'),
      lin(n.k, kvDim, D),
      ...vec(n.kBias, kvDim, 'zeros'),
      lin(n.v, kvDim, D),
      ...vec(n.vBias, kvDim, 'zeros'),
      ...vec(n.qNorm, c.headDim, 'ones'),
      ...vec(n.kNorm, c.headDim, 'ones'),
      lin(n.o, D, qDim),
      ...vec(n.oBias, D, 'zeros'),
      ...vec(n.postNorm, D, 'ones'),
      lin(n.gate, I, D),
      ...vec(n.gateBias, I, 'zeros'),
      lin(n.up, I, D),
      ...vec(n.upBias, I, 'zeros'),
      lin(n.down, D, I),
      ...vec(n.downBias, D, 'zeros'),
    );
  }
  specs.push({ name: FINAL_NORM, hfShape: [D], kind: 'vector', init: 'ones' });
  if (!c.tieEmbeddings) specs.push(lin(LM_HEAD, c.vocabSize, D));
  return specs;
}

/** Tensors real checkpoints carry that the decoder derives itself; loading skips them. */
export function isIgnorableTensor(c: ModelConfig, name: string): boolean {
  if (/\.rotary_emb\.inv_freq$/.test(name)) return true; // old Llama exports store the RoPE table
  return c.tieEmbeddings && name === LM_HEAD; // some tied checkpoints still save a copy of the head
}

/** Shape of the Variable that holds a tensor (linear weights are stored transposed). */
export function storedShape(s: WeightSpec): number[] {
  return s.kind === 'linear' ? [s.hfShape[1] as number, s.hfShape[0] as number] : [...s.hfShape];
}

/** Transposes a row-major [rows, cols] matrix (load/save of linear weights; once, not per step). */
export function transposeMatrix(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[base + c] as number;
  }
  return out;
}
