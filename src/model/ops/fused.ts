/**
 * The gradients of the fused decoder kernels (native/src/fused.cc, registered by the native
 * backends where the addon has them) and the test of whether they serve the active backend. Each
 * gradient part is its own kernel call, made only when the tape asks for it (a frozen norm weight
 * under LoRA never has its gradient computed).
 */
import * as tf from '@tensorflow/tfjs';
import { FUSED_KERNELS } from '../../backend/native/index.ts';

/** Whether fused kernel `name` serves the active backend (else the ops use the tfjs composition). */
export function fusedHere(name: string): boolean {
  return tf.getKernel(name, tf.getBackend()) !== undefined;
}

const run = (name: string, inputs: tf.NamedTensorMap, attrs: tf.NamedAttrMap): tf.Tensor =>
  tf.engine().runKernel(name, inputs, attrs) as tf.Tensor;

const noGradient = (kernel: string, input: string) => (): tf.Tensor => {
  throw new Error(`${kernel}: ${input} takes no gradient`);
};

tf.registerGradient({
  kernelName: FUSED_KERNELS.rmsNorm,
  inputsToSave: ['x', 'weight'],
  gradFunc: (dy, saved, attrs) => {
    const [x, weight] = saved as [tf.Tensor, tf.Tensor];
    const part = (p: 'x' | 'weight') => (): tf.Tensor =>
      // [..., D] or [D]
      run(FUSED_KERNELS.rmsNormGrad, { dy: dy as tf.Tensor, x, weight }, { eps: attrs['eps'] as number, part: p });
    return { x: part('x'), weight: part('weight') };
  },
});

tf.registerGradient({
  kernelName: FUSED_KERNELS.swiglu,
  inputsToSave: ['gate', 'up'],
  gradFunc: (dy, saved) => {
    const [gate, up] = saved as [tf.Tensor, tf.Tensor];
    const part = (p: 'gate' | 'up') => (): tf.Tensor =>
      run(FUSED_KERNELS.swigluGrad, { dy: dy as tf.Tensor, gate, up }, { part: p }); // same shape as gate
    return { gate: part('gate'), up: part('up') };
  },
});

tf.registerGradient({
  kernelName: FUSED_KERNELS.rope,
  inputsToSave: ['cos', 'sin'],
  gradFunc: (dy, saved, attrs) => {
    const [cos, sin] = saved as [tf.Tensor, tf.Tensor];
    const table = noGradient(FUSED_KERNELS.rope, 'the RoPE tables (positions are not trained)');
    return {
      x: () => run(FUSED_KERNELS.rope, { x: dy as tf.Tensor, cos, sin }, { inverse: !attrs['inverse'] }),
      cos: table,
      sin: table,
    }; // [B, T, H, hd]
  },
});

tf.registerGradient({
  kernelName: FUSED_KERNELS.selectedLogprobs,
  inputsToSave: ['logits', 'targets'],
  gradFunc: (dy, saved) => {
    const [logits, targets] = saved as [tf.Tensor, tf.Tensor];
    return {
      logits: () => run(FUSED_KERNELS.selectedLogprobsGrad, { dy: dy as tf.Tensor, logits, targets }, {}), // [N, V]
      targets: () => tf.zeros(targets.shape), // [N] (token ids take no gradient)
    };
  },
});

/** Runs fused kernel `name` (the caller checked fusedHere). */
export function runFused<T extends tf.Tensor>(name: string, inputs: tf.NamedTensorMap, attrs: tf.NamedAttrMap = {}): T {
  return run(name, inputs, attrs) as T;
}

tf.registerGradient({
  kernelName: FUSED_KERNELS.attnProbs,
  inputsToSave: ['q', 'k'],
  outputsToSave: [true],
  gradFunc: (dy, saved, attrs) => {
    const [q, k, probs] = saved as [tf.Tensor, tf.Tensor, tf.Tensor];
    const part = (p: 'q' | 'k') => (): tf.Tensor =>
      run(
        FUSED_KERNELS.attnProbsGrad,
        { dy: dy as tf.Tensor, probs, q, k },
        { scale: attrs['scale'] as number, part: p },
      ); // like q or k
    return { q: part('q'), k: part('k'), bias: noGradient(FUSED_KERNELS.attnProbs, 'the attention bias (a mask)') };
  },
});

tf.registerGradient({
  kernelName: FUSED_KERNELS.attnApply,
  inputsToSave: ['probs', 'v'],
  gradFunc: (dy, saved) => {
    const [probs, v] = saved as [tf.Tensor, tf.Tensor];
    const part = (p: 'probs' | 'v') => (): tf.Tensor =>
      run(FUSED_KERNELS.attnApplyGrad, { dy: dy as tf.Tensor, probs, v }, { part: p }); // like probs or v
    return { probs: part('probs'), v: part('v') };
  },
});
