import { totalmem } from 'node:os';
import { UserError } from '../../errors.ts';

/**
 * Bounds of a random-init model (`sharp init-model`, model.init), checked before any folder or
 * tensor exists: the largest tensor must fit one JavaScript typed array, and the float32 weights the
 * machine's memory (training needs about four times more: gradients and AdamW's two moments).
 * Without this a typo (`--hidden 1e6`) dies with a RangeError from inside the allocator.
 */
export interface InitDims {
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  intermediate: number;
  vocab: number;
  tieEmbeddings: boolean;
}

/** Most elements of one tensor: the typed arrays tfjs allocates are indexed by 32-bit signed sizes. */
const MAX_TENSOR_ELEMENTS = 2 ** 31 - 1;

/** Parameters of a Llama-layout decoder with these dimensions (biases aside: a rounding error here). */
export function initParameters(d: InitDims): number {
  const hd = d.hidden / d.heads;
  const attention = 2 * d.hidden * d.hidden + 2 * d.hidden * d.kvHeads * hd; // q, o; k, v
  const mlp = 3 * d.hidden * d.intermediate; // gate, up, down
  const embeddings = d.vocab * d.hidden * (d.tieEmbeddings ? 1 : 2);
  return embeddings + d.layers * (attention + mlp + 2 * d.hidden) + d.hidden;
}

/** Throws one line when the model cannot be built here; `what` prefixes it ('init-model', 'model.init'). */
export function checkInitSize(d: InitDims, what: string, memoryBytes: number = totalmem()): void {
  const largest = Math.max(d.vocab * d.hidden, d.hidden * d.intermediate, d.hidden * d.hidden);
  if (largest > MAX_TENSOR_ELEMENTS) {
    throw new UserError(
      `${what}: the largest weight (vocab x hidden, hidden x intermediate or hidden x hidden) would have ` +
        `${largest.toExponential(2)} elements, more than one tensor can hold (${MAX_TENSOR_ELEMENTS})`,
    );
  }
  const bytes = 4 * initParameters(d);
  if (bytes > memoryBytes) {
    const gb = (b: number): string => (b / 2 ** 30).toFixed(1);
    throw new UserError(
      `${what}: ${initParameters(d).toExponential(2)} parameters need ${gb(bytes)} GiB as float32, more than this ` +
        `machine's ${gb(memoryBytes)} GiB of memory`,
    );
  }
}
