import { Rng } from '../random/rng.ts';

/**
 * Normal(0, std) values from the seeded Rng (Box-Muller), for random-init models: HF initialises
 * Linear and Embedding weights with N(0, initializer_range = 0.02).
 */
export function normalArray(n: number, std: number, rng: Rng): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u1 = 1 - rng.float(); // (0, 1]: log stays finite
    const u2 = rng.float();
    const r = std * Math.sqrt(-2 * Math.log(u1));
    out[i] = r * Math.cos(2 * Math.PI * u2);
    if (i + 1 < n) out[i + 1] = r * Math.sin(2 * Math.PI * u2);
  }
  return out;
}
