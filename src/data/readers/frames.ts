import { z } from 'zod';
import type { Episode } from '../episode.ts';
import { BenchmarkFormatError, readRecords, readText } from './records.ts';
import { parseTsv } from './tsv.ts';

/**
 * FRAMES (Krishna et al., 2024; google/frames-benchmark): the official test.tsv (an unnamed index
 * column, Prompt, Answer, wikipedia_link_1..10, wikipedia_link_11+, reasoning_types, wiki_links) or
 * JSONL {id, question, answer}. Questions come without paragraphs: agents search a pooled corpus.
 */

const REQUIRED = ['Prompt', 'Answer'] as const;

/** "Numerical reasoning | Tabular reasoning" -> ["Numerical reasoning", "Tabular reasoning"]. */
export function splitReasoningTypes(s: string): string[] {
  return s
    .split('|')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

/** wiki_links is a Python list literal "['https://...', ...]": the quoted items, in order. */
export function parseWikiLinks(s: string): string[] {
  return [...s.matchAll(/'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] ?? m[2]);
}

function readFramesTsv(file: string): Episode[] {
  const rows = parseTsv(readText(file), file);
  if (rows.length === 0) throw new BenchmarkFormatError(`${file}: empty file (expected a header row)`);
  const header = rows[0].cells;
  for (const col of REQUIRED)
    if (!header.includes(col)) throw new BenchmarkFormatError(`${file}:1: column '${col}': missing from the header`);
  const at = (name: string) => header.indexOf(name);
  const linkCols = header.map((h, k) => [h, k] as const).filter(([h]) => h.startsWith('wikipedia_link_'));
  return rows.slice(1).map((row, k) => {
    if (row.cells.length !== header.length)
      throw new BenchmarkFormatError(
        `${file}:${row.line}: row has ${row.cells.length} cells, header has ${header.length}`,
      );
    const get = (name: string) => (at(name) >= 0 ? row.cells[at(name)] : '');
    const prompt = get('Prompt').trim();
    const answer = get('Answer').trim();
    if (prompt.length === 0) throw new BenchmarkFormatError(`${file}:${row.line}: Prompt: empty`);
    if (answer.length === 0) throw new BenchmarkFormatError(`${file}:${row.line}: Answer: empty`);
    // The first, unnamed column is pandas' index; FRAMES ids are that index.
    const id = header[0] === '' && row.cells[0].trim() !== '' ? row.cells[0].trim() : String(k);
    const links = get('wiki_links')
      ? parseWikiLinks(get('wiki_links'))
      : linkCols.map(([, c]) => row.cells[c].trim()).filter((u) => u.length > 0);
    const meta: Record<string, string | number | boolean | string[]> = { wikiLinks: links };
    if (at('reasoning_types') >= 0) meta.reasoningTypes = splitReasoningTypes(get('reasoning_types'));
    return { id, question: prompt, answers: [answer], paragraphs: [], meta };
  });
}

const framesJsonSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String),
  question: z.string().min(1),
  answer: z.union([z.string(), z.number()]).transform(String),
  reasoning_types: z.union([z.string(), z.array(z.string())]).optional(),
});

function readFramesJsonl(file: string, max?: number): Episode[] {
  return readRecords(file, framesJsonSchema, max).map(({ record: r }) => {
    const meta: Record<string, string | number | boolean | string[]> = {};
    if (r.reasoning_types !== undefined)
      meta.reasoningTypes = Array.isArray(r.reasoning_types)
        ? r.reasoning_types
        : splitReasoningTypes(r.reasoning_types);
    return { id: r.id, question: r.question, answers: [r.answer], paragraphs: [], meta };
  });
}

/** test.tsv (by extension .tsv) or JSONL / JSON. */
export function readFrames(file: string, max?: number): Episode[] {
  // The TSV test set is 824 rows (~1 MB): read whole.
  return file.toLowerCase().endsWith('.tsv') ? readFramesTsv(file).slice(0, max) : readFramesJsonl(file, max);
}
