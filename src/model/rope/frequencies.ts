import type { RopeSpec } from './spec.ts';

/**
 * Inverse frequencies of a RoPE spec and the scale applied to cos/sin, as Transformers'
 * modeling_rope_utils.py defines them (each variant returns (inv_freq, attention_scaling)).
 * Computed in float64; the caller rounds to float32 once.
 */
export interface RopeFrequencies {
  invFreq: Float64Array; // [hd/2]
  attentionScaling: number;
}

/** theta^(-2j/d) for j < d/2: the original RoPE frequencies. */
function baseFrequencies(dim: number, theta: number): Float64Array {
  const inv = new Float64Array(dim / 2);
  for (let j = 0; j < dim / 2; j++) inv[j] = 1 / Math.pow(theta, (2 * j) / dim);
  return inv;
}

/**
 * Llama 3.1: wavelengths shorter than original/highFreqFactor keep their frequency, longer than
 * original/lowFreqFactor are divided by `factor`, and the band between blends the two linearly in
 * original/wavelength.
 */
function llama3(dim: number, s: Extract<RopeSpec, { type: 'llama3' }>): Float64Array {
  const inv = baseFrequencies(dim, s.theta);
  const lowWavelen = s.originalMaxPositions / s.lowFreqFactor;
  const highWavelen = s.originalMaxPositions / s.highFreqFactor;
  return inv.map((f) => {
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < highWavelen) return f;
    if (wavelen > lowWavelen) return f / s.factor;
    const smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
    return ((1 - smooth) * f) / s.factor + smooth * f;
  });
}

/**
 * YaRN "NTK-by-parts": dimensions that rotate more than betaFast times over the original context
 * keep their frequency (extrapolation), fewer than betaSlow are divided by `factor`
 * (interpolation), with a linear ramp over the dimension index between (paper eq. 17-19).
 */
function yarn(dim: number, s: Extract<RopeSpec, { type: 'yarn' }>): Float64Array {
  // Dimension index at which a frequency completes `rotations` turns over the original context.
  const correctionDim = (rotations: number): number =>
    (dim * Math.log(s.originalMaxPositions / (rotations * 2 * Math.PI))) / (2 * Math.log(s.theta));
  let low = correctionDim(s.betaFast);
  let high = correctionDim(s.betaSlow);
  if (s.truncate) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001; // Transformers' guard against a zero-width ramp
  const inv = baseFrequencies(dim, s.theta);
  return inv.map((f, j) => {
    const ramp = Math.min(1, Math.max(0, (j - low) / (high - low)));
    const extrapolation = 1 - ramp; // weight of the original frequency
    return (f / s.factor) * (1 - extrapolation) + f * extrapolation;
  });
}

export function ropeFrequencies(spec: RopeSpec, headDim: number): RopeFrequencies {
  switch (spec.type) {
    case 'default':
      return { invFreq: baseFrequencies(headDim, spec.theta), attentionScaling: 1 };
    case 'linear':
      return { invFreq: baseFrequencies(headDim, spec.theta).map((f) => f / spec.factor), attentionScaling: 1 };
    case 'llama3':
      return { invFreq: llama3(headDim, spec), attentionScaling: 1 };
    case 'yarn':
      return { invFreq: yarn(headDim, spec), attentionScaling: spec.attentionFactor };
  }
}
