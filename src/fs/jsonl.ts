import { readTextFile } from './read-file.ts';

/** One non-blank line of a JSONL text: its 1-based line number and its parsed value. */
export interface JsonlLine {
  line: number;
  value: unknown;
}

export interface JsonlOptions {
  /**
   * The last non-blank line may be torn (a kill mid-append): when it is not JSON it is dropped, and
   * any other line that is not JSON is an error saying only the last line may be torn.
   */
  tornTail?: boolean;
  /** The error thrown for a line that is not JSON (default Error), e.g. UserError for a user's file. */
  error?: new (message: string) => Error;
}

/** The first line of a parser's message (one-line errors). */
const firstLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';

/**
 * One JSON text that names where it came from (`file:line`) when it is not JSON:
 * `<where>: not valid JSON (<reason>)`.
 */
export function parseJsonAt(text: string, where: string, error: new (message: string) => Error = Error): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new error(`${where}: not valid JSON (${firstLine(err)})`);
  }
}

/**
 * The values of a JSONL text, one per non-blank line, each with its line number; blank lines are
 * skipped. A line that is not JSON is an error naming `file:line`.
 */
export function parseJsonl(text: string, file: string, opts: JsonlOptions = {}): JsonlLine[] {
  const error = opts.error ?? Error;
  const lines = text.split('\n');
  let last = -1;
  if (opts.tornTail) for (let i = 0; i < lines.length; i++) if ((lines[i] as string).trim() !== '') last = i;
  const out: JsonlLine[] = [];
  lines.forEach((raw, i) => {
    const text = raw.trim();
    if (text === '') return;
    const where = `${file}:${i + 1}`;
    if (!opts.tornTail) {
      out.push({ line: i + 1, value: parseJsonAt(text, where, error) });
      return;
    }
    try {
      out.push({ line: i + 1, value: JSON.parse(text) });
    } catch {
      if (i === last) return;
      throw new error(`${where}: not valid JSON (only the last line may be torn)`);
    }
  });
  return out;
}

/** parseJsonl of a file's text. */
export function readJsonl(file: string, opts: JsonlOptions = {}): JsonlLine[] {
  return parseJsonl(readTextFile(file), file, opts);
}
