import { MAX_EXACT_SHAPLEY_WORKERS } from '../config/sections/credit.ts';
import type { Trajectory } from '../rollout/types.ts';

/**
 * Coalitions of workers as bitmasks. Worker m of a trajectory is the worker
 * spawned by delegation m (0-based, in order of delegation), so a coalition S maps to the replay
 * request "mask every delegation not in S". Bit m set = worker m reports.
 */
export type Coalition = number;

/** The grand coalition N of K workers. */
export function fullCoalition(k: number): Coalition {
  if (!Number.isInteger(k) || k < 0 || k > 30) throw new Error(`coalitions: worker count ${k} is out of range [0, 30]`);
  return k === 0 ? 0 : 2 ** k - 1;
}

export function hasWorker(s: Coalition, m: number): boolean {
  return ((s >>> m) & 1) === 1;
}

export function withWorker(s: Coalition, m: number): Coalition {
  return s | (1 << m);
}

function withoutWorker(s: Coalition, m: number): Coalition {
  return s & ~(1 << m);
}

/** |S|: number of workers in the coalition. */
export function coalitionSize(s: Coalition): number {
  let n = 0;
  for (let x = s; x !== 0; x &= x - 1) n += 1;
  return n;
}

/** Delegation indices masked (not reporting) when only the workers in S report. */
export function maskedDelegations(s: Coalition, k: number): number[] {
  const out: number[] = [];
  for (let m = 0; m < k; m++) if (!hasWorker(s, m)) out.push(m);
  return out;
}

/** Every subset of K workers (2^K coalitions), in increasing mask order; K at most MAX_EXACT_SHAPLEY_WORKERS. */
export function allCoalitions(k: number): Coalition[] {
  if (k > MAX_EXACT_SHAPLEY_WORKERS)
    throw new Error(`coalitions: ${k} workers are too many to enumerate (max ${MAX_EXACT_SHAPLEY_WORKERS})`);
  const n = 2 ** k;
  const out: Coalition[] = new Array<number>(n);
  for (let s = 0; s < n; s++) out[s] = s;
  return out;
}

/** The K leave-one-out coalitions N \ {m}, m = 0..K-1. */
export function leaveOneOutCoalitions(k: number): Coalition[] {
  const full = fullCoalition(k);
  return Array.from({ length: k }, (_, m) => withoutWorker(full, m));
}

/**
 * Number of workers K of a trajectory: its worker agents, whose delegation numbers must be exactly
 * 0..K-1 (the engine numbers delegations in order). Anything else is a malformed trajectory.
 */
export function workerCount(traj: Trajectory): number {
  const delegations = traj.agents.filter((a) => a.role === 'worker').map((a) => a.delegation);
  const seen = new Set<number>();
  for (const d of delegations) {
    if (d === null || !Number.isInteger(d) || d < 0 || d >= delegations.length || seen.has(d)) {
      throw new Error(
        `trajectory ${traj.id}: worker delegation numbers must be 0..${delegations.length - 1} without gaps (got ` +
          `${JSON.stringify(delegations)})`,
      );
    }
    seen.add(d);
  }
  return delegations.length;
}
