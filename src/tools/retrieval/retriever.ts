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

export interface Retriever {
  /** For messages: `index <dir>` or `retriever <url>`. */
  readonly name: string;
  /** Hits per query, in query order; rejects (one-line message) when the backend cannot answer. */
  search(queries: readonly string[], k: number): Promise<Hit[][]>;
  close?(): void;
}
