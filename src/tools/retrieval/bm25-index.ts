import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { UserError } from '../../errors.ts';
import { assertRegularFile, readRegularFile } from '../../fs/read-file.ts';
import { matchOf, queryTerms } from './fts-query.ts';
import { SearchStopped, type Hit, type Retriever, type SearchControl } from './retriever.ts';

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

/** Largest manifest read: ours are under 1 KiB; a bigger file is not one. */
const MAX_MANIFEST_BYTES = 1 << 20;

const count = z.number().int().nonnegative();

/**
 * The manifest, checked field by field: `index info` prints it and the server reports its passage
 * count, so a hand-edited or damaged one is refused, never shown or trusted.
 */
const ManifestSchema = z.object({
  format: z.literal(INDEX_FORMAT),
  version: z.number().int(),
  passages: count,
  tokenizer: z.string(),
  bm25: z.object({ k1: z.number().positive(), b: z.number().min(0).max(1) }),
  corpus: z.object({
    file: z.string(),
    bytes: count,
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 hex digits'),
    kind: z.enum(['passages', 'paragraphs']),
    records: count,
  }),
  sqlite: z.string(),
  builtAt: z.string(),
  buildSeconds: z.number().nonnegative(),
});

export type IndexManifest = z.infer<typeof ManifestSchema>;

/** The manifest of `dir`, or in words why it is not that of an index this program reads. */
function loadManifest(dir: string): IndexManifest | string {
  const file = join(dir, MANIFEST_FILE);
  if (!existsSync(file)) return `not a sharp index (no ${MANIFEST_FILE}; an interrupted build leaves none)`;
  let value: unknown;
  try {
    value = JSON.parse(readRegularFile(file, MAX_MANIFEST_BYTES, MANIFEST_FILE).toString('utf8'));
  } catch (err) {
    if (err instanceof UserError) return err.message;
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== undefined) return `${MANIFEST_FILE}: cannot read (${code})`;
    return `${MANIFEST_FILE}: not valid JSON (${(err instanceof Error ? err.message : String(err)).split('\n')[0]})`;
  }
  const head = value as { format?: unknown; version?: unknown } | null;
  if (typeof head !== 'object' || head === null || head.format !== INDEX_FORMAT)
    return `not a sharp index (${MANIFEST_FILE} is not the manifest of sharp index build)`;
  // A newer format may have other fields: its version is the whole message.
  if (head.version !== INDEX_VERSION)
    return `format version ${String(head.version)}, this program reads ${INDEX_VERSION} (rebuild it)`;
  const r = ManifestSchema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const where = issue?.path.join('.') || '(manifest)';
  return `${MANIFEST_FILE}: ${where}: ${issue?.message ?? 'invalid'} (rebuild the index)`;
}

/** The manifest of `dir` when it is an index this program built; null when it is anything else. */
export function readManifest(dir: string): IndexManifest | null {
  const m = loadManifest(dir);
  return typeof m === 'string' ? null : m;
}

/** The manifest of an index folder, or a one-line UserError saying why `dir` is not one. */
export function requireManifest(dir: string): IndexManifest {
  if (!existsSync(dir)) throw new UserError(`index ${dir}: not found (build one with sharp index build)`);
  const m = loadManifest(dir);
  if (typeof m === 'string') throw new UserError(`index ${dir}: ${m}`);
  const db = join(dir, DB_FILE);
  if (!existsSync(db)) throw new UserError(`index ${dir}: ${DB_FILE} is missing`);
  // SQLite opens the file by name with a blocking open(2): a pipe there would hang the command.
  assertRegularFile(db, `index ${dir}: ${DB_FILE}`);
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

/** Why a search must stop now, or null to go on; asked while SQLite scores the matching passages. */
export type StopCheck = () => SearchStopped['reason'] | null;

/** Rows SQLite scores between two calls of the stop check (a call costs about a microsecond). */
const CHECK_EVERY = 1024;

/** The stop check of a SearchControl (none: never stops). */
function stopCheckOf(control: SearchControl | undefined): StopCheck | undefined {
  if (!control || (control.signal === undefined && control.deadline === undefined)) return undefined;
  const { signal, deadline } = control;
  return () => (signal?.aborted ? 'cancelled' : deadline !== undefined && Date.now() > deadline ? 'deadline' : null);
}

/** A BM25 index opened read-only; several processes may open one index at once. */
export class Bm25Index implements Retriever {
  readonly name: string;
  readonly manifest: IndexManifest;
  private readonly db: Database.Database;
  private readonly match: Database.Statement<[string, number], { rowid: number; s: number }>;
  private readonly passage: Database.Statement<[number], { id: string; title: string; text: string }>;
  private readonly countUpTo: Database.Statement<[string, number], { n: number }>;
  private readonly maxTermShare: number;
  /** The stop check of the search under way (searchOne sets and clears it). */
  private stop: StopCheck | undefined;
  private rows = 0;

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
      // Called for every matching row: SQLite cannot be interrupted from JavaScript otherwise, and one
      // query of common words over a large index scores every passage (seconds).
      this.db.function('sharp_check', { deterministic: false }, () => this.check());
      // bm25() sorted by SQLite with the LIMIT (a bounded sorter) rather than FTS5's `ORDER BY rank`,
      // which sorts every match first: the same scores, faster (docs/speed.md); ties by rowid.
      this.match = this.db.prepare(
        'SELECT rowid, bm25(fts) + sharp_check() AS s FROM fts WHERE fts MATCH ? ORDER BY s, rowid LIMIT ?',
      );
      this.passage = this.db.prepare('SELECT id, title, text FROM passages WHERE rowid = ?');
      // Stops at the cap: counting a common word costs the cap, not its whole posting list.
      this.countUpTo = this.db.prepare(
        'SELECT count(*) AS n FROM (SELECT rowid FROM fts WHERE fts MATCH ? AND sharp_check() = 0 LIMIT ?)',
      );
    } catch (err) {
      throw new UserError(
        `index ${dir}: cannot open ${DB_FILE} (${(err instanceof Error ? err.message : String(err)).split('\n')[0]})`,
      );
    }
  }

  private check(): number {
    if (this.stop !== undefined && ++this.rows % CHECK_EVERY === 0) {
      const why = this.stop();
      if (why !== null) throw new SearchStopped(why);
    }
    return 0;
  }

  /** The words of `query` searched for: all of them, or without the common ones (maxTermShare). */
  private termsOf(query: string): string[] {
    const terms = queryTerms(query);
    if (this.maxTermShare >= 1 || terms.length < 2) return terms;
    const cap = Math.max(1, Math.floor(this.maxTermShare * this.manifest.passages));
    const rare = terms.filter((t) => (this.countUpTo.get(`"${t}"`, cap + 1)?.n ?? 0) <= cap);
    return rare.length > 0 ? rare : terms;
  }

  /**
   * The top `k` passages of one query, best first (no word in the query: none). `stop` is asked every
   * 1,024 rows scored; when it answers, the query ends with SearchStopped.
   */
  searchOne(query: string, k: number, stop?: StopCheck): Hit[] {
    const why = stop?.();
    if (why) throw new SearchStopped(why);
    this.stop = stop;
    this.rows = 0;
    try {
      const expr = matchOf(this.termsOf(query));
      if (expr === null || k <= 0) return [];
      return this.match.all(expr, k).map(({ rowid, s }) => {
        const p = this.passage.get(rowid);
        if (!p) throw new Error(`index ${this.dir}: passage row ${rowid} is missing`);
        return { id: p.id, title: p.title, text: p.text, score: -s };
      });
    } finally {
      this.stop = undefined;
    }
  }

  search(queries: readonly string[], k: number, control?: SearchControl): Promise<Hit[][]> {
    const stop = stopCheckOf(control);
    try {
      return Promise.resolve(queries.map((q) => this.searchOne(q, k, stop)));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  close(): void {
    this.db.close();
  }
}
