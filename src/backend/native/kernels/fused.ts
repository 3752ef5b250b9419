import type { TensorInfo } from '@tensorflow/tfjs';
import type { FusedKernelFn } from '../addon.ts';
import type { NativeContext } from '../context.ts';
import { asKernel, sizeOf, type KernelArgs, type KernelOverride } from './types.ts';

/**
 * Kernels with no tfjs counterpart: the decoder's RMSNorm, SwiGLU gate and RoPE, and the log-prob
 * of the sampled token under a softmax, forward and backward, each one native pass
 * (native/src/fused.cc), and the attention's two halves (native/src/attention.cc,
 * kernels/attention.ts). They exist only where the addon serves the backend and has them;
 * src/model/ops/fused.ts registers their gradients and falls back to the tfjs composition
 * elsewhere. Names are the contract between the two.
 */
export const FUSED_KERNELS = {
  rmsNorm: 'SharpRmsNorm',
  rmsNormGrad: 'SharpRmsNormGrad',
  swiglu: 'SharpSwiGlu',
  swigluGrad: 'SharpSwiGluGrad',
  rope: 'SharpRope',
  selectedLogprobs: 'SharpSelectedLogprobs',
  selectedLogprobsGrad: 'SharpSelectedLogprobsGrad',
  attnProbs: 'SharpAttnProbs',
  attnProbsGrad: 'SharpAttnProbsGrad',
  attnApply: 'SharpAttnApply',
  attnApplyGrad: 'SharpAttnApplyGrad',
  bf16MatMul: 'SharpBf16MatMul',
  bf16Unpack: 'SharpBf16Unpack',
} as const satisfies Record<FusedKernelFn, string>;

export function float32(name: string, ...ts: TensorInfo[]): void {
  for (const t of ts) if (t.dtype !== 'float32') throw new Error(`${name}: expects float32 tensors, got ${t.dtype}`);
}

function sameShape(name: string, a: TensorInfo, b: TensorInfo): void {
  if (a.shape.join() !== b.shape.join())
    throw new Error(`${name}: shapes [${a.shape.join(', ')}] and [${b.shape.join(', ')}] differ`);
}

/** x [..., D] and weight [D]: rows and columns of the norm. */
function normDims(name: string, x: TensorInfo, weight: TensorInfo): { rows: number; cols: number } {
  const cols = x.shape[x.shape.length - 1];
  if (cols === undefined || weight.shape.length !== 1 || weight.shape[0] !== cols) {
    throw new Error(
      `${name}: weight [${weight.shape.join(', ')}] does not match the last axis of x [${x.shape.join(', ')}]`,
    );
  }
  return { rows: cols === 0 ? 0 : sizeOf(x.shape) / cols, cols };
}

/** Runs the override's addon kernel: the tensors' references, then the scalars, in its argument slots. */
type Call = (refs: TensorInfo[], scalars: number[]) => void;

/** The override of fused kernel `fn`: registered under FUSED_KERNELS[fn], only where the binary has `fn`. */
export function fused(
  fn: FusedKernelFn,
  body: (args: KernelArgs, ctx: NativeContext, call: Call) => TensorInfo,
): KernelOverride {
  const name = FUSED_KERNELS[fn];
  return {
    name,
    needs: [fn],
    make: (ctx) =>
      asKernel((args: KernelArgs): TensorInfo =>
        body(args, ctx, (refs, scalars) => ctx.invoke(args.backend, fn, name, refs, scalars)),
      ),
  };
}

/** y = x * rsqrt(mean(x^2, -1) + eps) * weight. inputs {x [..., D], weight [D]}, attrs {eps}. */
const rmsNorm = fused('rmsNorm', ({ inputs, backend, attrs }, ctx, call) => {
  const { x, weight } = inputs as { x: TensorInfo; weight: TensorInfo };
  float32(FUSED_KERNELS.rmsNorm, x, weight);
  const { rows, cols } = normDims(FUSED_KERNELS.rmsNorm, x, weight);
  const y = ctx.output(backend, [...x.shape], 'float32'); // [..., D]
  if (rows > 0) call([x, weight, y], [rows, cols, attrs['eps'] as number]);
  return y;
});

/**
 * RMSNorm's gradient with respect to x (attrs.part 'x': [..., D]) or the weight ('weight': [D]),
 * one part per call so a gradient nobody asks for is never made. inputs {dy, x, weight}, attrs {eps, part}.
 */
const rmsNormGrad = fused('rmsNormGrad', ({ inputs, backend, attrs }, ctx, call) => {
  const { dy, x, weight } = inputs as { dy: TensorInfo; x: TensorInfo; weight: TensorInfo };
  float32(FUSED_KERNELS.rmsNormGrad, dy, x, weight);
  sameShape(FUSED_KERNELS.rmsNormGrad, dy, x);
  const { rows, cols } = normDims(FUSED_KERNELS.rmsNormGrad, x, weight);
  const wantX = attrs['part'] === 'x';
  const out = ctx.output(backend, wantX ? [...x.shape] : [cols], 'float32'); // [..., D] or [D]
  if (rows === 0) {
    if (!wantX && cols > 0) throw new Error(`${FUSED_KERNELS.rmsNormGrad}: the weight's gradient of an empty input`);
    return out;
  }
  call([dy, x, weight, out], [rows, cols, attrs['eps'] as number, wantX ? 0 : 1]);
  return out;
});

/** silu(gate) * up. inputs {gate, up} of one shape. */
const swiglu = fused('swiglu', ({ inputs, backend }, ctx, call) => {
  const { gate, up } = inputs as { gate: TensorInfo; up: TensorInfo };
  float32(FUSED_KERNELS.swiglu, gate, up);
  sameShape(FUSED_KERNELS.swiglu, gate, up);
  const out = ctx.output(backend, [...gate.shape], 'float32'); // same shape as gate
  const n = sizeOf(gate.shape);
  if (n > 0) call([gate, up, out], [n]);
  return out;
});

/** The gradient of silu(gate) * up with respect to gate (attrs.part 'gate') or up ('up'). inputs {dy, gate, up}. */
const swigluGrad = fused('swigluGrad', ({ inputs, backend, attrs }, ctx, call) => {
  const { dy, gate, up } = inputs as { dy: TensorInfo; gate: TensorInfo; up: TensorInfo };
  float32(FUSED_KERNELS.swigluGrad, dy, gate, up);
  sameShape(FUSED_KERNELS.swigluGrad, gate, up);
  sameShape(FUSED_KERNELS.swigluGrad, dy, gate);
  const out = ctx.output(backend, [...gate.shape], 'float32'); // same shape as gate
  const n = sizeOf(gate.shape);
  if (n > 0) call([dy, gate, up, out], [n, attrs['part'] === 'gate' ? 0 : 1]);
  return out;
});

/**
 * Rotate-half RoPE of x [B, T, H, hd] by the tables cos, sin [B, T, 1, hd/2]; attrs.inverse
 * rotates by the negative angle (the gradient). inputs {x, cos, sin}.
 */
const rope = fused('rope', ({ inputs, backend, attrs }, ctx, call) => {
  const { x, cos, sin } = inputs as { x: TensorInfo; cos: TensorInfo; sin: TensorInfo };
  float32(FUSED_KERNELS.rope, x, cos, sin);
  sameShape(FUSED_KERNELS.rope, cos, sin);
  const [b, t, h, hd] = x.shape as [number, number, number, number];
  if (x.shape.length !== 4 || hd % 2 !== 0 || cos.shape.join() !== [b, t, 1, hd / 2].join()) {
    throw new Error(
      `${FUSED_KERNELS.rope}: x [${x.shape.join(', ')}] needs tables [B, T, 1, hd/2], got [${cos.shape.join(', ')}]`,
    );
  }
  const out = ctx.output(backend, [...x.shape], 'float32'); // [B, T, H, hd]
  if (sizeOf(x.shape) > 0) call([x, cos, sin, out], [b * t, h, hd, attrs['inverse'] ? 1 : 0]);
  return out;
});

/** logits [N, V] float32, targets [N] int32 -> the float32 rows of the pair. */
function logitsDims(name: string, logits: TensorInfo, targets: TensorInfo): { rows: number; cols: number } {
  float32(name, logits);
  if (
    logits.shape.length !== 2 ||
    targets.shape.length !== 1 ||
    targets.shape[0] !== logits.shape[0] ||
    targets.dtype !== 'int32'
  ) {
    throw new Error(
      `${name}: expects logits [N, V] and int32 targets [N], got [${logits.shape.join(', ')}] and ` +
        `${targets.dtype} [${targets.shape.join(', ')}]`,
    );
  }
  return { rows: logits.shape[0]!, cols: logits.shape[1]! };
}

/** log softmax(logits)[target] per row. inputs {logits [N, V], targets [N] int32} -> [N]. */
const selectedLogprobs = fused('selectedLogprobs', ({ inputs, backend }, ctx, call) => {
  const { logits, targets } = inputs as { logits: TensorInfo; targets: TensorInfo };
  const { rows, cols } = logitsDims(FUSED_KERNELS.selectedLogprobs, logits, targets);
  const out = ctx.output(backend, [rows], 'float32'); // [N]
  if (rows > 0) call([logits, targets, out], [rows, cols]);
  return out;
});

/** Its gradient in the logits: dy * (onehot(target) - softmax(logits)). inputs {dy [N], logits, targets} -> [N, V]. */
const selectedLogprobsGrad = fused('selectedLogprobsGrad', ({ inputs, backend }, ctx, call) => {
  const { dy, logits, targets } = inputs as { dy: TensorInfo; logits: TensorInfo; targets: TensorInfo };
  const { rows, cols } = logitsDims(FUSED_KERNELS.selectedLogprobsGrad, logits, targets);
  float32(FUSED_KERNELS.selectedLogprobsGrad, dy);
  if (dy.shape.join() !== String(rows))
    throw new Error(`${FUSED_KERNELS.selectedLogprobsGrad}: dy [${dy.shape.join(', ')}] is not [${rows}]`);
  const out = ctx.output(backend, [rows, cols], 'float32'); // [N, V]
  if (rows * cols > 0) call([dy, logits, targets, out], [rows, cols]);
  return out;
});

export const fusedNative: KernelOverride[] = [
  rmsNorm,
  rmsNormGrad,
  swiglu,
  swigluGrad,
  rope,
  selectedLogprobs,
  selectedLogprobsGrad,
];

/**
 * Whether override `k` can be registered with `ctx`: the binary has every kernel it needs, and for
 * the fused ones SHARP_NATIVE_FUSED is not 0 (which keeps the compositions, to measure the fusion).
 */
export function registrable(k: KernelOverride, ctx: NativeContext): boolean {
  if (k.needs === undefined) return true;
  if (process.env['SHARP_NATIVE_FUSED'] === '0') return false;
  return k.needs.every((fn) => ctx.has(fn));
}
