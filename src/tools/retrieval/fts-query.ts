/**
 * A free-text query as an FTS5 MATCH expression: its words, each quoted (so no word is read as an
 * FTS5 operator or column filter), joined by OR, as BM25 scores a bag of words. English stopwords
 * are dropped when other words remain, as Lucene's EnglishAnalyzer (pyserini's default) does: they
 * carry almost no IDF but each one makes FTS5 score every passage that contains it.
 */

/** Lucene's ENGLISH_STOP_WORDS_SET. */
const STOPWORDS = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
]);

/** Most distinct words a query keeps (a pasted paragraph is not a query; FTS5 cost grows per word). */
export const MAX_QUERY_TERMS = 32;

/** The query's distinct lower-case words in order, stopwords dropped unless nothing else is left. */
export function queryTerms(query: string): string[] {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  const content = words.filter((w) => !STOPWORDS.has(w));
  return (content.length > 0 ? content : words).slice(0, MAX_QUERY_TERMS);
}

/** The MATCH expression of `query`, or null when it has no word at all. */
export function ftsMatch(query: string): string | null {
  return matchOf(queryTerms(query));
}

/** The MATCH expression of words (queryTerms' output): each quoted, joined by OR; null for none. */
export function matchOf(terms: readonly string[]): string | null {
  return terms.length === 0 ? null : terms.map((t) => `"${t}"`).join(' OR ');
}
