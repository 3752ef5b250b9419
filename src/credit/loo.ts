/**
 * SHARP leave-one-out credit.
 * Worker m: Delta_m = R(tau) - R(tau \ m), the drop in success when only m's report is masked.
 * Planner: mean over the K workers of max(Delta_m, 0): the planner is credited for the workers it
 * delegated to usefully, and not blamed for harmful reports (those are the workers' own blame).
 */
export interface LooCredit {
  /** Delta_m per worker, indexed by delegation. */
  deltas: number[];
  /** mean_m max(Delta_m, 0); 0 when the planner delegated nothing (no worker to credit it through). */
  planner: number;
}

/** Delta_m = vFull - vWithout[m]. */
export function looDeltas(vFull: number, vWithout: readonly number[]): number[] {
  return vWithout.map((v) => vFull - v);
}

/** mean_m max(x_m, 0), 0 for an empty list. */
export function plannerCredit(workerCredits: readonly number[]): number {
  if (workerCredits.length === 0) return 0;
  let sum = 0;
  for (const d of workerCredits) sum += Math.max(d, 0);
  return sum / workerCredits.length;
}

export function looCredit(vFull: number, vWithout: readonly number[]): LooCredit {
  const deltas = looDeltas(vFull, vWithout);
  return { deltas, planner: plannerCredit(deltas) };
}
