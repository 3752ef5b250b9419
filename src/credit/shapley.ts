import type { Rng } from '../random/rng.ts';
import { type Coalition, allCoalitions, coalitionSize, fullCoalition, hasWorker, withWorker } from './coalitions.ts';

/**
 * Shapley credit over workers:
 *   phi_m = sum_{S subset N\{m}} |S|! (K-|S|-1)! / K! [v(S u {m}) - v(S)]
 * exact for small K (2^K values, shared and cached by counterfactual.ts), and by permutation
 * sampling beyond: phi_m = mean over sampled orderings of m's marginal contribution when it joins
 * the workers before it. Both satisfy efficiency sum_m phi_m = v(N) - v(empty) exactly: the exact
 * weights sum to one per player, and each sampled ordering's marginals telescope to v(N) - v(empty).
 */
export type ValueFn = (s: Coalition) => number;

/** n! as a float (exact up to 18!, enough for K <= 20). */
function factorial(n: number): number {
  let f = 1;
  for (let i = 2; i <= n; i++) f *= i;
  return f;
}

/** Exact Shapley values of K players under v (evaluates v on all 2^K coalitions). */
export function exactShapley(k: number, v: ValueFn): number[] {
  const weights = Array.from({ length: k }, (_, s) => (factorial(s) * factorial(k - s - 1)) / factorial(k));
  const phi = new Array<number>(k).fill(0);
  for (const s of allCoalitions(k)) {
    const vs = v(s);
    const size = coalitionSize(s);
    for (let m = 0; m < k; m++) {
      if (hasWorker(s, m)) continue;
      phi[m] += weights[size] * (v(withWorker(s, m)) - vs);
    }
  }
  return phi;
}

/** `count` orderings of K players drawn with the seeded Rng (Fisher-Yates). */
export function samplePermutations(k: number, count: number, rng: Rng): number[][] {
  if (!Number.isInteger(count) || count < 1)
    throw new Error(`credit.shapleyPermutations: ${count} is not a positive integer`);
  const base = Array.from({ length: k }, (_, m) => m);
  return Array.from({ length: count }, () => rng.shuffle(base));
}

/** The coalitions (prefixes of each ordering) whose values permutation sampling reads. */
export function permutationCoalitions(perms: readonly number[][]): Coalition[] {
  const out = new Set<Coalition>([0]);
  for (const p of perms) {
    let s = 0;
    for (const m of p) {
      s = withWorker(s, m);
      out.add(s);
    }
  }
  return [...out];
}

/** Monte-Carlo Shapley: mean marginal contribution over the given orderings. */
export function sampledShapley(k: number, perms: readonly number[][], v: ValueFn): number[] {
  if (perms.length === 0) throw new Error('sampledShapley: no permutations');
  const phi = new Array<number>(k).fill(0);
  for (const p of perms) {
    if (p.length !== k) throw new Error(`sampledShapley: permutation of length ${p.length} for ${k} workers`);
    let s = 0;
    let prev = v(0);
    for (const m of p) {
      s = withWorker(s, m);
      const cur = v(s);
      phi[m] += cur - prev;
      prev = cur;
    }
  }
  return phi.map((x) => x / perms.length);
}

/** |sum_m phi_m - (v(N) - v(empty))|: 0 up to rounding for both estimators. */
export function efficiencyResidual(k: number, phi: readonly number[], v: ValueFn): number {
  const total = phi.reduce((a, b) => a + b, 0);
  return Math.abs(total - (v(fullCoalition(k)) - v(0)));
}
