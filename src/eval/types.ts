/**
 * What `sharp eval` records per episode and how a benchmark turns those records into official
 * numbers and files. Benchmarks are entries of one registry (benchmarks.ts), chosen once
 * by name.
 */
import type { Episode } from '../data/episode.ts';

/** The system's output for one episode, benchmark-neutral. */
export interface Prediction {
  /**
   * Episode.id (MuSiQue full holds each id twice: predictions align by position, see episodeKeys in predictions.ts).
   */
  id: string;
  /** Final answer; '' when the system gave none. */
  answer: string;
  /** Paragraph idx the agents retrieved and cited (MuSiQue support, HotpotQA sp). */
  supportIdx: number[];
  /** False when the system judged the question unanswerable (MuSiQue full). */
  answerable: boolean;
  /**
   * Paragraph idx of the episode that any search of the trajectory returned, in first-retrieved
   * order (recall of the supporting paragraphs, recall.ts); absent in logs of older runs.
   */
  retrievedIdx?: number[];
  /** Free-text reasoning trace (GAIA submissions carry one). */
  trace?: string;
}

/** Per-episode scores in [0, 1], keyed by metric name; absent keys are not counted. */
export type ItemScores = Record<string, number>;

export interface Benchmark {
  name: string;
  description: string;
  /** Shipped sample, relative to the repository root. */
  sample: string;
  /** The official metric, in words (for `sharp eval --list`). */
  metric: string;
  /** Key of the headline number in `aggregate()`. */
  headline: string;
  /**
   * Episodes in file order; with `max`, at most the first `max` (fewer only when the file has no more), read no
   * further.
   */
  read(file: string, max?: number): Episode[];
  /**
   * Episodes may repeat an id back to back (MuSiQue full: answerable, then unanswerable); --limit never splits such a
   * run.
   */
  repeatsIds?: boolean;
  /** Scores of one prediction; the same functions as the official metric, per item. */
  score(pred: Prediction, ep: Episode): ItemScores;
  /** The official numbers over all episodes, as the official script prints them. */
  aggregate(preds: readonly Prediction[], eps: readonly Episode[]): Record<string, number>;
  /** Breakdown dimensions of an episode: dimension -> the groups it belongs to. */
  groups(ep: Episode): Record<string, string[]>;
  /** File name of the official-format predictions. */
  predictionsFile: string;
  /** The predictions in the benchmark's submission format (preds aligned with eps). */
  formatPredictions(preds: readonly Prediction[], eps: readonly Episode[]): string;
  /**
   * The gold records of exactly these episodes, in the official gold format, so the official
   * evaluator can run on a --limit subset; absent where the benchmark has no offline evaluator.
   */
  goldSubset?: { file: string; text(sourceFile: string, eps: readonly Episode[]): string };
  /**
   * The official evaluator ported: scores a gold file and a predictions file exactly as the
   * benchmark's script would, so the numbers printed are those of the files written.
   */
  scoreFiles?: (goldFile: string, predictionsFile: string) => Record<string, number>;
}

/** Checks that predictions line up with episodes (same length, same ids, same order). */
export function checkAligned(preds: readonly Prediction[], eps: readonly Episode[]): void {
  if (preds.length !== eps.length)
    throw new Error(`predictions (${preds.length}) and episodes (${eps.length}) differ in number`);
  for (let i = 0; i < eps.length; i++) {
    if (preds[i].id !== eps[i].id)
      throw new Error(`prediction ${i} has id ${preds[i].id}, episode ${i} has id ${eps[i].id}`);
  }
}
