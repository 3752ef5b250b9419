/**
 * The engine's unit of work: one question with its gold answers and (optionally) the paragraphs the
 * agents may search and a gold decomposition. Every benchmark reader and the synthetic world map to it.
 */
export interface Paragraph {
  /** Paragraph id as the benchmark numbers it (MuSiQue `idx`); support metrics compare these. */
  idx: number;
  title: string;
  text: string;
  /** Gold support flag where the benchmark gives one. */
  isSupporting?: boolean;
}

/** One hop of a gold decomposition (MuSiQue `question_decomposition`). */
export interface SubQuestion {
  id: number;
  /** May reference earlier hops as `#1`, `#2` (MuSiQue convention). */
  question: string;
  answer: string;
  paragraphSupportIdx: number | null;
}

export interface Episode {
  id: string;
  question: string;
  /** Gold answer first, then aliases. Empty only for unanswerable items. */
  answers: string[];
  /** Retrieval corpus of this episode (distractor setting); empty when a pooled corpus is used. */
  paragraphs: Paragraph[];
  decomposition?: SubQuestion[];
  answerable?: boolean;
  /** Benchmark-specific fields kept for breakdowns (hop count, type, level, reasoning types). */
  meta?: Record<string, string | number | boolean | string[]>;
}
