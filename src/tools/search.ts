/**
 * `search` tool: BM25 (minisearch's BM25+) over the title and
 * text of a paragraph set, either one episode's paragraphs (MuSiQue distractor setting) or a pooled
 * corpus. The agent reads the top-k hits as `[idx] Title: text` lines; the engine records the idx
 * values in rank order (`retrievedIdx`) for the support metrics.
 */
import MiniSearch from 'minisearch';
import type { Episode, Paragraph } from '../data/episode.ts';
import type { Tool, ToolOutcome } from './types.ts';

export interface SearchOptions {
  /** Paragraphs returned per query. */
  topK: number;
  /** Characters of each paragraph's text shown to the agent (longer texts end with "..."). */
  maxChars: number;
  /**
   * Weight of a title match relative to a text match. Titles name the paragraph's subject (as in
   * Wikipedia-derived MuSiQue), so a query about an entity should rank that entity's own paragraph
   * above paragraphs that only mention it.
   */
  titleBoost?: number;
  /**
   * Show each hit as a snippet, as web search engines do: only its `snippet` sentences that share
   * the most words with the query, in text order (0 = the whole paragraph). Shorter results keep
   * the context of a small model short and put the answer next to the words that ask for it.
   */
  snippet?: number;
}

/** Longest query accepted; longer text is not a search query but a paste. */
export const MAX_QUERY_CHARS = 1000;

interface IndexedParagraph {
  id: number;
  title: string;
  text: string;
}

/** Built indexes, keyed by the paragraph array they index (one build per episode; no leak). */
const indexCache = new WeakMap<readonly Paragraph[], MiniSearch<IndexedParagraph>>();

function buildIndex(paragraphs: readonly Paragraph[]): MiniSearch<IndexedParagraph> {
  const seen = new Set<number>();
  for (const p of paragraphs) {
    if (!Number.isInteger(p.idx))
      throw new Error(`search: paragraph idx ${String(p.idx)} (title '${p.title}') is not an integer`);
    if (seen.has(p.idx)) throw new Error(`search: duplicate paragraph idx ${p.idx} (title '${p.title}')`);
    seen.add(p.idx);
  }
  const index = new MiniSearch<IndexedParagraph>({ fields: ['title', 'text'], idField: 'id' });
  index.addAll(paragraphs.map((p) => ({ id: p.idx, title: p.title, text: p.text })));
  return index;
}

function indexFor(paragraphs: readonly Paragraph[]): MiniSearch<IndexedParagraph> {
  let index = indexCache.get(paragraphs);
  if (!index) {
    index = buildIndex(paragraphs);
    indexCache.set(paragraphs, index);
  }
  return index;
}

/** One hit as the agent reads it: `[idx] Title: text`, text cut to maxChars, newlines flattened. */
export function formatHit(p: Paragraph, maxChars: number): string {
  return formatHitLine(p.idx, p.title, p.text, maxChars);
}

/** The line of formatHit for any label: a corpus passage shows its corpus id (tools/retrieval/search-tool.ts). */
export function formatHitLine(label: string | number, title: string, body: string, maxChars: number): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  const text = flat.length > maxChars ? `${flat.slice(0, Math.max(0, maxChars - 3)).trimEnd()}...` : flat;
  return `[${label}] ${title}: ${text}`;
}

/** Words that tell no sentence from another: question words and the commonest function words. */
const SNIPPET_STOPWORDS = new Set([
  'a',
  'an',
  'the',
  'of',
  'in',
  'is',
  'was',
  'by',
  'as',
  'for',
  'to',
  'and',
  'what',
  'which',
  'who',
  'whom',
  'whose',
  'when',
  'where',
  'how',
  'did',
  'does',
  'do',
]);

/** Words as crude stems (their first 6 letters: "headquartered" meets "headquarters"), stopwords dropped. */
const wordsOf = (s: string): string[] =>
  (s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !SNIPPET_STOPWORDS.has(w)).map((w) => w.slice(0, 6));

/**
 * The `n` sentences of `text` sharing the most distinct non-stopword words with `query`, in text
 * order (ties: the earlier sentence). Sentences end at `.`, `!` or `?` followed by a space.
 */
export function snippetOf(text: string, query: string, n: number): string {
  const sentences = text
    .replace(/\s+/g, ' ')
    .trim()
    .split(/(?<=[.!?]) (?=\S)/);
  if (sentences.length <= n) return sentences.join(' ');
  const q = new Set(wordsOf(query));
  const scored = sentences.map((s, i) => ({ i, score: new Set(wordsOf(s).filter((w) => q.has(w))).size }));
  const keep = scored
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, n)
    .map((x) => x.i)
    .sort((a, b) => a - b);
  return keep.map((i) => sentences[i]).join(' ');
}

export function validateOptions(opts: SearchOptions): void {
  if (!Number.isInteger(opts.topK) || opts.topK <= 0)
    throw new Error(`search: topK must be a positive integer, got ${opts.topK}`);
  if (!Number.isInteger(opts.maxChars) || opts.maxChars <= 3)
    throw new Error(`search: maxChars must be an integer > 3, got ${opts.maxChars}`);
}

/**
 * A search tool over `paragraphs` (their `idx` values must be distinct, else this throws). The index
 * is cached per array, so all G trajectories of an episode share one build.
 */
export function createSearch(paragraphs: readonly Paragraph[], opts: SearchOptions): Tool {
  validateOptions(opts);
  const byIdx = new Map(paragraphs.map((p) => [p.idx, p]));
  const boost = { title: opts.titleBoost ?? 2 };
  // Built (or fetched from the cache) now, so a bad corpus fails where it is made, not mid-rollout.
  const index = indexFor(paragraphs);
  return async (args: string): Promise<ToolOutcome> => {
    const query = args.trim();
    if (query.length === 0) return { ok: false, output: 'search error: empty query' };
    if (query.length > MAX_QUERY_CHARS)
      return { ok: false, output: `search error: query longer than ${MAX_QUERY_CHARS} characters` };
    // BM25+ with OR over the query terms: a hop question shares only a few words with its paragraph.
    const hits = index.search(query, { boost, combineWith: 'OR' }).slice(0, opts.topK);
    const retrievedIdx = hits.map((h) => h.id as number);
    if (retrievedIdx.length === 0) return { ok: true, output: 'No paragraph matched the query.', retrievedIdx };
    const shown = (p: Paragraph): Paragraph =>
      opts.snippet ? { ...p, text: snippetOf(p.text, query, opts.snippet) } : p;
    const lines = retrievedIdx.map((idx) => formatHit(shown(byIdx.get(idx) as Paragraph), opts.maxChars));
    return { ok: true, output: lines.join('\n'), retrievedIdx };
  };
}

/**
 * Pools the paragraphs of many episodes into one corpus (open-retrieval setting): identical
 * (title, text) pairs are kept once and renumbered 0..N-1 in first-seen order, so `retrievedIdx`
 * values are corpus ids. `origin` maps each corpus id back to (episode id, episode idx) pairs, which
 * lets a caller score support against an episode's own idx values.
 */
export interface PooledCorpus {
  paragraphs: Paragraph[];
  origin: Map<number, { episodeId: string; idx: number }[]>;
}

export function poolParagraphs(episodes: readonly Episode[]): PooledCorpus {
  const paragraphs: Paragraph[] = [];
  const origin = new Map<number, { episodeId: string; idx: number }[]>();
  const idOf = new Map<string, number>();
  for (const ep of episodes) {
    for (const p of ep.paragraphs) {
      const key = `${p.title}\u0000${p.text}`;
      let id = idOf.get(key);
      if (id === undefined) {
        id = paragraphs.length;
        idOf.set(key, id);
        paragraphs.push({ idx: id, title: p.title, text: p.text });
        origin.set(id, []);
      }
      origin.get(id)?.push({ episodeId: ep.id, idx: p.idx });
    }
  }
  return { paragraphs, origin };
}

/** A search tool over a pooled corpus (build it once with `poolParagraphs` and share it). */
export function createPooledSearch(corpus: PooledCorpus, opts: SearchOptions): Tool {
  return createSearch(corpus.paragraphs, opts);
}
