/**
 * What every `search` backend over a corpus answers: for each query, the top-k passages, best
 * first. The on-disk index (bm25-index.ts) and a Search-R1 retrieval server (remote.ts) both
 * implement it; the `search` tool (search-tool.ts) turns hits into the text the agent reads.
 */
export interface Hit {
  /** The corpus's passage id. */
  id: string;
  title: string;
  text: string;
  /** Retrieval score, larger is better (BM25 for the index; whatever the server returns, else absent). */
  score?: number;
}

/** How a caller bounds one search (the retrieval server: a client gone, a request's time budget). */
export interface SearchControl {
  /** Stops the search when aborted (its client went away). */
  signal?: AbortSignal;
  /** Stops the search at this wall-clock time (Date.now()). */
  deadline?: number;
}

/** A search stopped by its SearchControl before it ended: no partial result is returned. */
export class SearchStopped extends Error {
  constructor(readonly reason: 'cancelled' | 'deadline') {
    super(reason === 'cancelled' ? 'search cancelled' : 'search stopped at its deadline');
  }
}

export interface Retriever {
  /** For messages: `index <dir>` or `retriever <url>`. */
  readonly name: string;
  /**
   * Hits per query, in query order; rejects (one-line message) when the backend cannot answer, and
   * with SearchStopped when `control` stops it (backends that cannot stop mid-way may ignore it).
   */
  search(queries: readonly string[], k: number, control?: SearchControl): Promise<Hit[][]>;
  close?(): void;
}
