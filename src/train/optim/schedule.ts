/**
 * Learning-rate schedule: linear warmup, then constant or cosine decay.
 * `step` is 0-based (the update about to be taken). Warmup reaches the peak at step warmup - 1:
 * lr = peak * (step + 1) / warmup, so step 0 is already a (small) update rather than a wasted one
 * with lr 0 (nanoGPT get_lr). Cosine (Loshchilov & Hutter 2017, SGDR) runs from the peak at step
 * `warmup` to minLr at step `total` and stays there: lr = minLr + (peak - minLr) (1 + cos(pi p)) / 2,
 * p = (step - warmup) / (total - warmup).
 */
export type ScheduleKind = 'constant' | 'cosine';

export interface ScheduleOptions {
  kind: ScheduleKind;
  peak: number;
  warmupSteps: number;
  /** Total updates (cosine reaches minLr here). */
  totalSteps: number;
  /** Floor of the cosine, as a fraction of the peak (default 0). */
  minLrRatio?: number;
}

export function learningRateAt(step: number, o: ScheduleOptions): number {
  if (!Number.isInteger(step) || step < 0) throw new Error(`learningRateAt: step must be a non-negative integer, got ${step}`);
  if (step < o.warmupSteps) return (o.peak * (step + 1)) / o.warmupSteps;
  if (o.kind === 'constant') return o.peak;
  const minLr = o.peak * (o.minLrRatio ?? 0);
  const span = o.totalSteps - o.warmupSteps;
  const p = span <= 0 ? 1 : Math.min(1, (step - o.warmupSteps) / span);
  return minLr + ((o.peak - minLr) * (1 + Math.cos(Math.PI * p))) / 2;
}
