/**
 * Reading benchmark files record by record with the position of each record, so that a bad record
 * gives one line naming the file, the line and the field, whether the file is JSONL
 * (MuSiQue, GAIA, WebWalkerQA) or one JSON array (HotpotQA, 2Wiki, DocMath-Eval).
 */
import { existsSync } from 'node:fs';
import type { z } from 'zod';
import { parseJsonl } from '../../fs/jsonl.ts';
import { streamJsonRecords } from './stream.ts';
import { readTextFile } from '../../fs/read-file.ts';

/** A bad benchmark file or record; the message is one line `file:line: field: problem`. */
export class BenchmarkFormatError extends Error {
  override readonly name = 'BenchmarkFormatError';
}

export interface RawRecord {
  /** 1-based line where the record starts. */
  line: number;
  value: unknown;
}

/** The file's text, with a one-line error when it is missing. */
export function readText(file: string): string {
  if (!existsSync(file)) throw new BenchmarkFormatError(`${file}: file not found`);
  let text: string;
  try {
    text = readTextFile(file);
  } catch (err) {
    throw new BenchmarkFormatError(`${(err as Error).message.split('\n')[0]}`);
  }
  return text.replace(/^\uFEFF/, '');
}

/**
 * Start offsets of the top-level elements of a JSON array text: a scan that tracks strings and
 * nesting depth (JSON.parse keeps no positions).
 */
function arrayElementOffsets(text: string): number[] {
  const starts: number[] = [];
  let depth = 0;
  let inString = false;
  let expectElement = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === ' ' || c === '\n' || c === '\r' || c === '\t') continue;
    if (depth === 1 && expectElement && c !== ']') {
      starts.push(i);
      expectElement = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth += 1;
      if (depth === 1) expectElement = true;
    } else if (c === ']' || c === '}') depth -= 1;
    else if (c === ',' && depth === 1) expectElement = true;
  }
  return starts;
}

/**
 * Records of a JSONL file (one object per non-blank line) or of a JSON array file (first non-blank
 * character `[`). A line that is not JSON is an error naming its line.
 */
export function readJsonRecords(file: string): RawRecord[] {
  const text = readText(file);
  const first = text.trimStart()[0];
  if (first === '[') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new BenchmarkFormatError(`${file}: not valid JSON (${(err as Error).message})`);
    }
    if (!Array.isArray(parsed)) throw new BenchmarkFormatError(`${file}: expected a JSON array of records`);
    const offsets = arrayElementOffsets(text);
    // Line numbers are counted once over the text, not per record (files reach 100 MB).
    const lines: number[] = [];
    let line = 1;
    let pos = 0;
    for (const off of offsets) {
      for (; pos < off; pos++) if (text.charCodeAt(pos) === 10) line += 1;
      lines.push(line);
    }
    return parsed.map((value: unknown, k) => ({ line: lines[k] ?? 1, value }));
  }
  return parseJsonl(text, file, { error: BenchmarkFormatError });
}

/** `a.b[2].c` from a zod issue path. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out.length === 0 ? String(p) : `.${String(p)}`;
  }
  return out.length === 0 ? '(record)' : out;
}

/** Parse one record with its zod schema; the first issue becomes a one-line error. */
export function parseRecord<S extends z.ZodType>(schema: S, rec: RawRecord, file: string): z.infer<S> {
  const r = schema.safeParse(rec.value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new BenchmarkFormatError(
    `${file}:${rec.line}: ${fieldPath(issue.path)}: ${issue.message.replace(/\s+/g, ' ')}`,
  );
}

/**
 * Every record of a JSONL / JSON-array file, parsed with the schema; with `max`, only the first
 * `max`, streamed (stream.ts): the rest of the file is never read.
 */
export function readRecords<S extends z.ZodType>(
  file: string,
  schema: S,
  max?: number,
): Array<{ line: number; record: z.infer<S> }> {
  return rawRecords(file, max).map((rec) => ({ line: rec.line, record: parseRecord(schema, rec, file) }));
}

/** All raw records (readJsonRecords), or the first `max` streamed. */
export function rawRecords(file: string, max?: number): RawRecord[] {
  if (max === undefined) return readJsonRecords(file);
  if (!existsSync(file)) throw new BenchmarkFormatError(`${file}: file not found`);
  return [...streamJsonRecords(file, max)];
}
