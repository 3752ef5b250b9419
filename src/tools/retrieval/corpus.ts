import { createHash } from 'node:crypto';
import { closeSync, readSync, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { joinSentences } from '../../data/readers/hotpot.ts';
import { BenchmarkFormatError } from '../../data/readers/records.ts';
import { streamJsonRecords } from '../../data/readers/stream.ts';
import { UserError } from '../../errors.ts';
import { openRegularFile } from '../../fs/read-file.ts';
import { fromContents, type TitledText } from './contents.ts';

/**
 * The passages of a corpus file, read as a stream (one 1 MiB piece at a time, so a 21M-passage
 * wiki-18 file is never held in memory):
 * - `passages`: Search-R1 / pyserini JSONL, one `{"id", "contents": "\"Title\"\ntext"}` per line;
 * - `paragraphs`: the paragraphs of benchmark records: MuSiQue (`paragraphs[{title,
 *   paragraph_text}]`, also what `sharp data synth` writes) and HotpotQA / 2Wiki (`context[[title,
 *   sentences]]`), JSONL or one JSON array. The caller pools them (MuSiQue's open-domain setting).
 * A file holds one kind; a line that is neither stops the read with `file:line: problem`.
 */
export type CorpusKind = 'passages' | 'paragraphs';

export interface CorpusPassage extends TitledText {
  /** The corpus's id (`passages`); absent for benchmark paragraphs, which the pool numbers. */
  id?: string;
}

export interface CorpusRecord {
  line: number;
  kind: CorpusKind;
  passages: CorpusPassage[];
}

const CHUNK = 1 << 20;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The passages of one parsed record, or a one-line problem. */
export function recordPassages(value: unknown): { kind: CorpusKind; passages: CorpusPassage[] } | string {
  if (!isObject(value)) return 'expected a JSON object';
  if ('contents' in value) {
    if (typeof value.contents !== 'string') return 'contents: expected a string';
    const id = value.id;
    if (typeof id !== 'string' && !(typeof id === 'number' && Number.isFinite(id)))
      return 'id: expected a string or a number';
    return { kind: 'passages', passages: [{ id: String(id), ...fromContents(value.contents) }] };
  }
  if (Array.isArray(value.paragraphs)) {
    const out: CorpusPassage[] = [];
    for (const [i, p] of value.paragraphs.entries()) {
      if (!isObject(p) || typeof p.title !== 'string' || typeof p.paragraph_text !== 'string')
        return `paragraphs[${i}]: expected {title, paragraph_text} strings`;
      out.push({ title: p.title, text: p.paragraph_text });
    }
    return { kind: 'paragraphs', passages: out };
  }
  if (Array.isArray(value.context)) {
    const out: CorpusPassage[] = [];
    for (const [i, c] of value.context.entries()) {
      if (
        !Array.isArray(c) ||
        typeof c[0] !== 'string' ||
        !Array.isArray(c[1]) ||
        !c[1].every((s) => typeof s === 'string')
      )
        return `context[${i}]: expected [title, [sentences]]`;
      out.push({ title: c[0], text: joinSentences(c[1] as string[]) });
    }
    return { kind: 'paragraphs', passages: out };
  }
  return (
    'expected {id, contents} (Search-R1 corpus), a MuSiQue record (paragraphs) or a HotpotQA / 2Wiki record ' +
    '(context)'
  );
}

/** First non-blank character of the file ('' when it has none; a leading byte order mark is not one). */
function firstChar(file: string): string {
  const { fd } = openRegularFile(file);
  try {
    const buf = Buffer.alloc(4096);
    for (let pos = 0; ;) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n === 0) return '';
      const m = /\S/.exec(
        buf
          .subarray(0, n)
          .toString('utf8')
          .replace(/^\uFEFF/, ''),
      );
      if (m) return m[0];
      pos += n;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Non-blank lines of a JSONL file with their 1-based numbers; `onBytes` after each piece read. A
 * UTF-8 byte order mark at the start of the file is dropped, as every other reader of user files
 * drops it (data/readers/stream.ts): editors on Windows write one.
 */
function* jsonlLines(file: string, onBytes: (bytes: number) => void): Generator<{ line: number; text: string }> {
  const { fd } = openRegularFile(file);
  const buf = Buffer.allocUnsafe(CHUNK);
  const dec = new StringDecoder('utf8');
  let rest = '';
  let line = 1;
  let bytes = 0;
  try {
    for (let n = readSync(fd, buf, 0, CHUNK, null); n > 0; n = readSync(fd, buf, 0, CHUNK, null)) {
      const piece = dec.write(buf.subarray(0, n));
      const text = rest + (bytes === 0 ? piece.replace(/^\uFEFF/, '') : piece);
      bytes += n;
      const rows = text.split('\n');
      rest = rows.pop() ?? '';
      for (const row of rows) {
        if (row.trim().length > 0) yield { line, text: row };
        line += 1;
      }
      onBytes(bytes);
    }
    rest += dec.end();
    if (rest.trim().length > 0) yield { line, text: rest };
  } finally {
    closeSync(fd);
  }
}

export interface ReadCorpusOptions {
  /** Bytes of the file read so far (JSONL: after each 1 MiB piece; a JSON array: at the end). */
  onBytes?: (bytes: number) => void;
}

/** The records of a corpus file in order, each with its passages. */
export function* readCorpus(file: string, opts: ReadCorpusOptions = {}): Generator<CorpusRecord> {
  const onBytes = opts.onBytes ?? (() => {});
  let kind: CorpusKind | undefined;
  const check = (line: number, value: unknown): CorpusRecord => {
    const r = recordPassages(value);
    if (typeof r === 'string') throw new UserError(`${file}:${line}: ${r}`);
    kind ??= r.kind;
    if (r.kind !== kind)
      throw new UserError(
        `${file}:${line}: a ${r.kind === 'passages' ? 'Search-R1 passage' : 'benchmark record'} in a file whose ` +
          `first record was ${kind === 'passages' ? 'a Search-R1 passage' : 'a benchmark record'} (one kind per ` +
          `corpus)`,
      );
    return { line, kind: r.kind, passages: r.passages };
  };
  if (firstChar(file) === '[') {
    try {
      for (const rec of streamJsonRecords(file)) yield check(rec.line, rec.value);
    } catch (err) {
      if (err instanceof BenchmarkFormatError) throw new UserError(err.message);
      throw err;
    }
    onBytes(statSync(file).size);
    return;
  }
  for (const { line, text } of jsonlLines(file, onBytes)) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new UserError(
        `${file}:${line}: not valid JSON (${(err instanceof Error ? err.message : String(err)).split('\n')[0]})`,
      );
    }
    yield check(line, value);
  }
}

/** sha256 of a file's bytes, read in pieces. */
export function fileSha256(file: string): string {
  const h = createHash('sha256');
  const { fd } = openRegularFile(file);
  const buf = Buffer.allocUnsafe(CHUNK);
  try {
    for (let n = readSync(fd, buf, 0, CHUNK, null); n > 0; n = readSync(fd, buf, 0, CHUNK, null))
      h.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}
