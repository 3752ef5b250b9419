import type { Paragraph } from '../../data/episode.ts';
import { formatHitLine, MAX_QUERY_CHARS, snippetOf, validateOptions, type SearchOptions } from '../search.ts';
import type { Tool, ToolOutcome } from '../types.ts';
import { passageKey } from './contents.ts';
import type { Hit, Retriever } from './retriever.ts';

/**
 * The `search` tool over a corpus (the `index` and `remote` backends): the same text as the
 * episode backend (tools/search.ts), one `[id] Title: text` line per hit with the corpus id as the
 * label, the same `snippet` and `maxChars` shortening and the same error lines. The outcome records
 * the corpus ids (`retrievedIds`) and, for hits that are paragraphs of the episode itself (matched
 * by title and text: MuSiQue's open setting pools them into the index), the episode's idx values
 * (`retrievedIdx`), so support and recall metrics work unchanged. A backend that cannot answer is an
 * invalid call with its one-line reason; the rollout goes on.
 */
export function createCorpusSearch(retriever: Retriever, paragraphs: readonly Paragraph[], opts: SearchOptions): Tool {
  validateOptions(opts);
  const local = new Map<string, number>();
  for (const p of paragraphs) if (!local.has(passageKey(p))) local.set(passageKey(p), p.idx);
  return async (args: string): Promise<ToolOutcome> => {
    const query = args.trim();
    if (query.length === 0) return { ok: false, output: 'search error: empty query' };
    if (query.length > MAX_QUERY_CHARS)
      return { ok: false, output: `search error: query longer than ${MAX_QUERY_CHARS} characters` };
    let hits: Hit[];
    try {
      hits = ((await retriever.search([query], opts.topK))[0] ?? []).slice(0, opts.topK);
    } catch (err) {
      return {
        ok: false,
        output: `search error: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`,
      };
    }
    const retrievedIds = hits.map((h) => h.id);
    const retrievedIdx = hits.flatMap((h) => {
      const idx = local.get(passageKey(h));
      return idx === undefined ? [] : [idx];
    });
    if (hits.length === 0) return { ok: true, output: 'No paragraph matched the query.', retrievedIdx, retrievedIds };
    // A server whose documents carry no id (Search-R1's BM25 retriever) gets its rank as the label, as Search-R1 shows
    // "Doc 1".
    const lines = hits.map((h, i) =>
      formatHitLine(
        h.id || String(i + 1),
        h.title,
        opts.snippet ? snippetOf(h.text, query, opts.snippet) : h.text,
        opts.maxChars,
      ),
    );
    return { ok: true, output: lines.join('\n'), retrievedIdx, retrievedIds };
  };
}
