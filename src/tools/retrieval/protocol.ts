/**
 * The retrieval protocol of Search-R1's retrieval server (search_r1/search/retrieval_server.py),
 * also spoken by verl's multi-turn search tool and rLLM's search example:
 *
 *   POST /retrieve  {"queries": ["q1", ...], "topk": 3, "return_scores": true}
 *   200             {"result": [[{"document": {"id": "..", "contents": "\"Title\"\ntext"}, "score": 1.5}, ...], ...]}
 *
 * one list per query, best first; with `return_scores` false (the server's default) each list holds
 * the bare documents. `topk` may be left out (the server's configured default, 3 in Search-R1).
 * Documents are corpus rows `{id, contents}` (the dense retriever) or `{title, text, contents}`
 * (the BM25 retriever over an index that stores its documents); only `contents` is required, `id`
 * is read when present.
 */
import { fromContents, toContents } from './contents.ts';
import type { Hit } from './retriever.ts';

export interface RetrieveRequest {
  queries: string[];
  topk: number;
  returnScores: boolean;
}

export interface RequestLimits {
  /** Most queries in one request. */
  maxQueries: number;
  /** Largest topk answered. */
  maxTopk: number;
  /** Longest query, in characters. */
  maxQueryChars: number;
  /** topk when the request leaves it out. */
  defaultTopk: number;
}

export const DEFAULT_LIMITS: RequestLimits = { maxQueries: 256, maxTopk: 100, maxQueryChars: 2000, defaultTopk: 3 };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A parsed request body, or the one-line reason it is malformed (the server answers 400 with it). */
export function parseRetrieveRequest(body: unknown, limits: RequestLimits = DEFAULT_LIMITS): RetrieveRequest | string {
  if (!isObject(body)) return 'body: expected a JSON object {"queries": [...], "topk": k, "return_scores": bool}';
  const { queries, topk, return_scores: scores } = body;
  if (!Array.isArray(queries) || !queries.every((q) => typeof q === 'string'))
    return 'queries: expected a list of strings';
  if (queries.length > limits.maxQueries)
    return `queries: ${queries.length} in one request, at most ${limits.maxQueries}`;
  const long = queries.findIndex((q) => q.length > limits.maxQueryChars);
  if (long >= 0) return `queries[${long}]: longer than ${limits.maxQueryChars} characters`;
  // Search-R1 reads a missing, null or 0 topk as its configured default (`if not request.topk`).
  const wanted = topk === undefined || topk === null || topk === 0 ? limits.defaultTopk : topk;
  if (!(Number.isInteger(wanted) && (wanted as number) >= 1 && (wanted as number) <= limits.maxTopk))
    return `topk: expected an integer 1..${limits.maxTopk}`;
  if (scores !== undefined && scores !== null && typeof scores !== 'boolean')
    return 'return_scores: expected true or false';
  return { queries: queries as string[], topk: wanted as number, returnScores: scores === true };
}

/** A document as the protocol carries it. */
function documentOf(h: Hit): { id: string; contents: string } {
  return { id: h.id, contents: toContents(h) };
}

/** The response body for `hits` (one list per query). */
export function retrieveResponse(hits: readonly Hit[][], returnScores: boolean): { result: unknown[][] } {
  return {
    result: hits.map((list) =>
      list.map((h) => (returnScores ? { document: documentOf(h), score: h.score ?? 0 } : documentOf(h))),
    ),
  };
}

/** The request body a client sends. */
export function retrieveRequestBody(queries: readonly string[], topk: number): string {
  return JSON.stringify({ queries, topk, return_scores: true });
}

function hitOf(entry: unknown, where: string): Hit {
  if (!isObject(entry)) throw new Error(`${where}: expected an object`);
  const scored = isObject(entry.document);
  const doc = scored ? (entry.document as Record<string, unknown>) : entry;
  if (typeof doc.contents !== 'string') throw new Error(`${where}: document has no contents string`);
  const id = typeof doc.id === 'string' || typeof doc.id === 'number' ? String(doc.id) : '';
  const hit: Hit = { id, ...fromContents(doc.contents) };
  if (scored && typeof entry.score === 'number' && Number.isFinite(entry.score)) hit.score = entry.score;
  return hit;
}

/**
 * The hits of a response body to `queries` queries; throws a one-line Error when the body is not the protocol's shape.
 */
export function parseRetrieveResponse(body: unknown, queries: number): Hit[][] {
  if (!isObject(body) || !Array.isArray(body.result)) throw new Error('response: expected {"result": [[...], ...]}');
  if (body.result.length !== queries)
    throw new Error(`response: ${body.result.length} result lists for ${queries} queries`);
  return body.result.map((list, i) => {
    if (!Array.isArray(list)) throw new Error(`response: result[${i}] is not a list`);
    return list.map((e, j) => hitOf(e, `response: result[${i}][${j}]`));
  });
}
