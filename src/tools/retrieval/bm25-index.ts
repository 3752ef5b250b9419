import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { UserError } from '../../errors.ts';
import type { CorpusKind } from './corpus.ts';
import { matchOf, queryTerms } from './fts-query.ts';
import type { Hit, Retriever } from './retriever.ts';

/**
 * The on-disk BM25 index `sharp index build` writes: a folder with `passages.sqlite` (a `passages`
 * table and an FTS5 table over its title and text, external content, so the text is stored once)
 * and `index.json`, the manifest, written last. Queries read the database through SQLite's page
 * cache; the corpus is never loaded into memory.
 *
 * Scores are FTS5's `bm25()` negated: FTS5 returns -BM25 so that `ORDER BY rank` puts the best
 * first; a `Hit.score` is the BM25 score itself (larger is better). FTS5 fixes k1 = 1.2 and
 * b = 0.75 and sums a term's frequency over the two columns with weight 1 each over the passage's
 * total length, which is BM25 over `contents` as one field, as pyserini indexes it (its own
 * defaults are k1 = 0.9, b = 0.4, not settable in FTS5). IDF is log((N - n + 0.5) / (n + 0.5)),
 * floored at 1e-6 for terms in half the passages or more.
 */

export const INDEX_FORMAT = 'sharp-bm25-index';
export const INDEX_VERSION = 1;
export const MANIFEST_FILE = 'index.json';
export const DB_FILE = 'passages.sqlite';
/**
 * The FTS5 tokenizer: Unicode word split, case and diacritics folded, Porter stems (as pyserini's English analyzer
 * stems).
 */
export const TOKENIZER = 'porter unicode61 remove_diacritics 2';
export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

export interface IndexManifest {
  format: typeof INDEX_FORMAT;
  version: number;
  passages: number;
  tokenizer: string;
  bm25: { k1: number; b: number };
  corpus: { file: string; bytes: number; sha256: string; kind: CorpusKind; records: number };
  sqlite: string;
  builtAt: string;
  buildSeconds: number;
}

/** The manifest of `dir` when it is an index this program built; null when it is anything else. */
export function readManifest(dir: string): IndexManifest | null {
  const file = join(dir, MANIFEST_FILE);
  if (!existsSync(file)) return null;
  try {
    const m = JSON.parse(readFileSync(file, 'utf8')) as Partial<IndexManifest>;
    return m.format === INDEX_FORMAT && typeof m.passages === 'number' ? (m as IndexManifest) : null;
  } catch {
    return null;
  }
}

/** The manifest of an index folder, or a one-line UserError saying why `dir` is not one. */
export function requireManifest(dir: string): IndexManifest {
  if (!existsSync(dir)) throw new UserError(`index ${dir}: not found (build one with sharp index build)`);
  const m = readManifest(dir);
  if (!m)
    throw new UserError(
      `index ${dir}: not a sharp index (no valid ${MANIFEST_FILE}; an interrupted build leaves none)`,
    );
  if (m.version !== INDEX_VERSION)
    throw new UserError(`index ${dir}: format version ${m.version}, this program reads ${INDEX_VERSION} (rebuild it)`);
  if (!existsSync(join(dir, DB_FILE))) throw new UserError(`index ${dir}: ${DB_FILE} is missing`);
  return m;
}

/** Bytes of the index on disk (the database and the manifest). */
export function indexBytes(dir: string): number {
  return statSync(join(dir, DB_FILE)).size + statSync(join(dir, MANIFEST_FILE)).size;
}

export interface IndexOptions {
  /**
   * Words of a query found in more than this share of the passages are left out of it when the
   * query has rarer words (1 = never: exact BM25). FTS5 scores every passage holding any query
   * word, so a query's time grows with its commonest word (docs/retrieval.md); such a word adds
   * little to a score (idf ln((1 - p) / p) at share p) but many passages to score.
   */
  maxTermShare?: number;
}

/** A BM25 index opened read-only; several processes may open one index at once. */
export class Bm25Index implements Retriever {
  readonly name: string;
  readonly manifest: IndexManifest;
  private readonly db: Database.Database;
  private readonly match: Database.Statement<[string, number], { rowid: number; rank: number }>;
  private readonly passage: Database.Statement<[number], { id: string; title: string; text: string }>;
  private readonly countUpTo: Database.Statement<[string, number], { n: number }>;
  private readonly maxTermShare: number;

  constructor(
    readonly dir: string,
    opts: IndexOptions = {},
  ) {
    this.maxTermShare = opts.maxTermShare ?? 1;
    if (!(this.maxTermShare > 0 && this.maxTermShare <= 1))
      throw new UserError(`index ${dir}: maxTermShare must be in (0, 1], got ${this.maxTermShare}`);
    this.manifest = requireManifest(dir);
    this.name = `index ${dir}`;
    try {
      this.db = new Database(join(dir, DB_FILE), { readonly: true, fileMustExist: true });
      this.match = this.db.prepare('SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?');
      this.passage = this.db.prepare('SELECT id, title, text FROM passages WHERE rowid = ?');
      // Stops at the cap: counting a common word costs the cap, not its whole posting list.
      this.countUpTo = this.db.prepare('SELECT count(*) AS n FROM (SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?)');
    } catch (err) {
      throw new UserError(
        `index ${dir}: cannot open ${DB_FILE} (${(err instanceof Error ? err.message : String(err)).split('\n')[0]})`,
      );
    }
  }

  /** The words of `query` searched for: all of them, or without the common ones (maxTermShare). */
  private termsOf(query: string): string[] {
    const terms = queryTerms(query);
    if (this.maxTermShare >= 1 || terms.length < 2) return terms;
    const cap = Math.max(1, Math.floor(this.maxTermShare * this.manifest.passages));
    const rare = terms.filter((t) => (this.countUpTo.get(`"${t}"`, cap + 1)?.n ?? 0) <= cap);
    return rare.length > 0 ? rare : terms;
  }

  /** The top `k` passages of one query, best first (no word in the query: none). */
  searchOne(query: string, k: number): Hit[] {
    const expr = matchOf(this.termsOf(query));
    if (expr === null || k <= 0) return [];
    return this.match.all(expr, k).map(({ rowid, rank }) => {
      const p = this.passage.get(rowid);
      if (!p) throw new Error(`index ${this.dir}: passage row ${rowid} is missing`);
      return { id: p.id, title: p.title, text: p.text, score: -rank };
    });
  }

  search(queries: readonly string[], k: number): Promise<Hit[][]> {
    try {
      return Promise.resolve(queries.map((q) => this.searchOne(q, k)));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  close(): void {
    this.db.close();
  }
}
