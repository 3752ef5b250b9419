/** One measured number of `npm run bench`; sections (model, rollout, native kernels) each return rows. */
export interface BenchRow {
  section: string;
  metric: string;
  value: number;
  unit: string;
  /** The target, for the table (e.g. '<= 300'). */
  target?: string;
}

/** A bench section: a named async function in its own file under scripts/bench/. */
export interface BenchSection {
  name: string;
  run: (quick: boolean) => Promise<BenchRow[]>;
}
