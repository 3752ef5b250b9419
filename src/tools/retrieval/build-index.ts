/**
 * `sharp index build`: a corpus file (corpus.ts) into the index folder bm25-index.ts reads.
 *
 * Atomic: the index is written into a hidden sibling `.<name>.building-<pid>` and renamed onto
 * `out` only when the database is closed and synced and its manifest written, so a killed build
 * leaves no folder under `out` that looks whole. A later build removes the leftovers of builds
 * whose process is gone. An existing `out` is replaced only when it is an index this program built
 * (or an empty folder), file by file and never a file it did not write (fs/output-guard.ts).
 *
 * Benchmark paragraphs are pooled: a (title, text) pair met again is kept once, and passages are
 * numbered "0", "1", ... in first-seen order (as tools/search.ts poolParagraphs numbers them).
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { writeFileAtomic } from '../../fs/atomic.ts';
import { claimOutDir, claimOutFile, publishOutDir } from '../../fs/output-guard.ts';
import { openRegularFile } from '../../fs/read-file.ts';
import { UserError } from '../../errors.ts';
import {
  BM25_B,
  BM25_K1,
  DB_FILE,
  INDEX_FORMAT,
  INDEX_VERSION,
  MANIFEST_FILE,
  readManifest,
  TOKENIZER,
  type IndexManifest,
} from './bm25-index.ts';
import { passageKey } from './contents.ts';
import { fileSha256, readCorpus, type CorpusKind } from './corpus.ts';

interface BuildProgress {
  /** Corpus bytes read so far, of `totalBytes`. */
  bytes: number;
  totalBytes: number;
  passages: number;
}

export interface BuildOptions {
  corpus: string;
  out: string;
  /** Called as the corpus is read (at most once per 1 MiB piece). */
  onProgress?: (p: BuildProgress) => void;
}

/** Rows inserted per transaction; the build yields to the event loop between them (progress bar, signals). */
const BATCH = 5000;

const LEFTOVER = (name: string): RegExp =>
  new RegExp(`^\\.${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(building|replaced)-(\\d+)$`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes what killed builds of `out` left behind; refuses while another build of `out` runs. */
function clearLeftovers(out: string): void {
  const parent = dirname(out);
  const re = LEFTOVER(basename(out));
  for (const entry of readdirSync(parent)) {
    const m = re.exec(entry);
    if (!m) continue;
    const pid = Number(m[2]);
    if (pid !== process.pid && alive(pid))
      throw new UserError(
        `--out ${out}: another build of this index is running (process ${pid}, folder ${join(parent, entry)})`,
      );
    rmSync(join(parent, entry), { recursive: true, force: true });
  }
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The command recorded as the owner of an index folder. */
const COMMAND = 'index build';

const nextTick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The corpus's size, when it is a regular file (a pipe, a device or a folder is named as such, never read). */
function corpusBytes(corpus: string, given: string): number {
  let opened;
  try {
    opened = openRegularFile(corpus, `--corpus ${given}`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new UserError(`--corpus ${given}: file not found`);
    if (code !== undefined) throw new UserError(`--corpus ${given}: cannot read (${code})`);
    throw err;
  }
  closeSync(opened.fd);
  return opened.size;
}

/**
 * Refuses, in an earlier index, a database or manifest that is not as this command wrote it:
 * replaced by hand, edited since (its size changed), or a link, pipe or device. The same test as
 * every file output (fs/output-guard.ts claimOutFile); `out` itself was claimed (a link refused).
 */
function checkOutFiles(out: string, given: string, corpus: string): void {
  for (const f of [DB_FILE, MANIFEST_FILE]) {
    try {
      lstatSync(join(out, f));
    } catch {
      continue;
    }
    claimOutFile(join(given, f), {
      command: COMMAND,
      flag: '--out',
      forceable: false,
      inputs: [{ path: corpus, what: '--corpus' }],
    });
  }
}

/** Builds the index of `corpus` into `out`; returns its manifest. */
export async function buildIndex(opts: BuildOptions): Promise<IndexManifest> {
  const corpus = resolve(opts.corpus);
  const out = resolve(opts.out);
  const totalBytes = corpusBytes(corpus, opts.corpus);
  const t0 = performance.now();
  // An earlier index (its manifest says so) is replaced, file by file; any other non-empty folder is refused.
  const earlier = existsSync(out) && statSync(out).isDirectory() && readManifest(out) !== null;
  claimOutDir(out, {
    command: COMMAND,
    flag: '--out',
    forceable: false,
    force: earlier,
    inputs: [{ path: corpus, what: '--corpus' }],
    writes: [DB_FILE, MANIFEST_FILE],
  });
  checkOutFiles(out, opts.out, corpus);
  clearLeftovers(out);
  const sha256 = fileSha256(corpus);
  const tmp = join(dirname(out), `.${basename(out)}.building-${process.pid}`);
  mkdirSync(tmp);
  let db: Database.Database | undefined;
  try {
    db = new Database(join(tmp, DB_FILE));
    // The folder is invisible until renamed, so no journal: a crash loses only the temp folder.
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -65536');
    db.exec(
      `CREATE TABLE passages(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT ` +
        `NULL);
      CREATE VIRTUAL TABLE fts USING fts5(title, text, content='passages', content_rowid='rowid', ` +
        `tokenize='${TOKENIZER}');
      CREATE TEMP TABLE seen(k BLOB PRIMARY KEY) WITHOUT ROWID;`,
    );
    const addPassage = db.prepare('INSERT INTO passages(rowid, id, title, text) VALUES (?, ?, ?, ?)');
    const addFts = db.prepare('INSERT INTO fts(rowid, title, text) VALUES (?, ?, ?)');
    const markSeen = db.prepare('INSERT OR IGNORE INTO seen(k) VALUES (?)');
    let passages = 0;
    let records = 0;
    let bytes = 0;
    let kind: CorpusKind = 'passages';
    let pending = 0;
    db.exec('BEGIN');
    const report = (): void => opts.onProgress?.({ bytes, totalBytes, passages });
    for (const rec of readCorpus(corpus, { onBytes: (b) => void ((bytes = b), report()) })) {
      kind = rec.kind;
      records += 1;
      for (const p of rec.passages) {
        if (rec.kind === 'paragraphs' && markSeen.run(createHash('sha1').update(passageKey(p)).digest()).changes === 0)
          continue;
        const rowid = passages + 1;
        addPassage.run(rowid, p.id ?? String(passages), p.title, p.text);
        addFts.run(rowid, p.title, p.text);
        passages += 1;
        pending += 1;
      }
      if (pending >= BATCH) {
        db.exec('COMMIT');
        await nextTick();
        db.exec('BEGIN');
        pending = 0;
      }
    }
    db.exec('COMMIT');
    if (passages === 0) throw new UserError(`--corpus ${opts.corpus}: no passages`);
    report();
    // One b-tree per term instead of one per batch: queries read one segment.
    db.exec("INSERT INTO fts(fts) VALUES ('optimize')");
    const sqlite = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
    db.close();
    db = undefined;
    fsyncPath(join(tmp, DB_FILE));
    const manifest: IndexManifest = {
      format: INDEX_FORMAT,
      version: INDEX_VERSION,
      passages,
      tokenizer: TOKENIZER,
      bm25: { k1: BM25_K1, b: BM25_B },
      corpus: { file: corpus, bytes: totalBytes, sha256, kind, records },
      sqlite,
      builtAt: new Date().toISOString(),
      buildSeconds: Math.round((performance.now() - t0) / 100) / 10,
    };
    writeFileAtomic(join(tmp, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
    fsyncPath(tmp);
    publishOutDir(tmp, out, COMMAND);
    fsyncPath(dirname(out));
    return manifest;
  } catch (err) {
    db?.close();
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}
