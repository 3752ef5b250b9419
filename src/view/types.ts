import type { StepRecord } from '../credit/record.ts';

/**
 * What the page reads (served by `sharp view` as /api/index.json and /api/steps/<name>, or inlined
 * in an exported file): the run's charts as Vega-Lite specs, its facts, the list of recorded steps,
 * and the ablation comparison when the folder is a `sharp ablate` output.
 */
export interface ChartView {
  name: string;
  title: string;
  /** A Vega-Lite spec with its data inlined. */
  spec: Record<string, unknown>;
}

export interface StepEntry {
  /** File stem (step-000001, eval-000001): the id the page asks for. */
  name: string;
  kind: 'train' | 'eval';
  step: number;
  groups: number;
  groupsTotal: number;
}

export interface AblationView {
  complete: boolean;
  header: string[];
  rows: string[][];
  plot: Record<string, unknown>;
  /** Run folders inside the ablation folder, by method and seed. */
  runs: { method: string; seed: number; dir: string; before: string; after: string }[];
}

export interface ViewIndex {
  version: 1;
  title: string;
  /** Short facts (held-out accuracy before / after, steps). */
  facts: [string, string][];
  charts: ChartView[];
  steps: StepEntry[];
  /** Step records left out because they could not be read, as `trajectories/<file>: <reason>`. */
  skipped?: string[];
  ablation?: AblationView;
}

/** The exported file's inlined data: the index and every recorded step. */
export interface ViewBundle {
  index: ViewIndex;
  steps: Record<string, StepRecord>;
}
