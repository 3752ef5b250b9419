/**
 * Test-only float64 RoPE frequencies written from the published formulas, independently of
 * src/model/rope (no shared code): Su et al. 2021 (theta^(-2i/d)), position interpolation
 * (Chen et al. 2023: positions / s), Llama 3.1's `apply_scaling` (Meta's reference code) and YaRN
 * "NTK-by-parts" (Peng et al. 2023, section 3.2) with Transformers' dimension-index ramp.
 */
export interface RefRopeParams {
  dim: number;
  base: number;
  kind: 'default' | 'linear' | 'llama3' | 'yarn';
  scale?: number;
  lowFreq?: number;
  highFreq?: number;
  oldContext?: number;
  alpha?: number; // YaRN beta_slow
  beta?: number; // YaRN beta_fast
  truncate?: boolean;
  mscale?: number;
}

export function refInvFreq(p: RefRopeParams): number[] {
  const out: number[] = [];
  for (let i = 0; i < p.dim; i += 2) out.push(Math.exp((-i / p.dim) * Math.log(p.base)));
  const s = p.scale ?? 1;
  if (p.kind === 'default') return out;
  if (p.kind === 'linear') return out.map((f) => f / s);
  const L = p.oldContext as number;
  if (p.kind === 'llama3') {
    const lo = p.lowFreq as number;
    const hi = p.highFreq as number;
    return out.map((freq) => {
      const wavelen = (2 * Math.PI) / freq;
      if (wavelen < L / hi) return freq;
      if (wavelen > L / lo) return freq / s;
      const smooth = (L / wavelen - lo) / (hi - lo);
      return (1 - smooth) * (freq / s) + smooth * freq;
    });
  }
  // YaRN: dimension pair d rotates r(d) = L / lambda_d times over the old context, lambda_d = 2 pi b^(2d/D).
  // Solve r(d) = beta for d: the pair index where the ramp starts / ends.
  const solve = (rot: number): number => (p.dim * Math.log(L / (2 * Math.PI * rot))) / (2 * Math.log(p.base));
  let a = solve(p.beta as number);
  let b = solve(p.alpha as number);
  if (p.truncate ?? true) [a, b] = [Math.floor(a), Math.ceil(b)];
  a = Math.max(a, 0);
  b = Math.min(b, p.dim - 1);
  if (a === b) b += 0.001;
  return out.map((theta, d) => {
    let gamma = (d - a) / (b - a); // 0 below a (keep theta), 1 above b (interpolate)
    gamma = gamma < 0 ? 0 : gamma > 1 ? 1 : gamma;
    return gamma * (theta / s) + (1 - gamma) * theta;
  });
}

/** YaRN's default attention temperature sqrt(1/t) = 0.1 ln(s) + 1 (paper eq. 22), 1 for s <= 1. */
export function refYarnScale(s: number): number {
  return s <= 1 ? 1 : 0.1 * Math.log(s) + 1;
}
