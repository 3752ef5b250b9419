import { closeSync, openSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { parseJsonAt } from '../../fs/jsonl.ts';
import { BenchmarkFormatError, type RawRecord } from './records.ts';

/**
 * Records of a JSONL or JSON-array benchmark file read as a stream: the file is read in 1 MiB
 * pieces and each record is parsed as soon as it is complete, so `sharp eval --limit 2` on a
 * 100 MB file holds two records in memory, not the file, and stops reading after them. Same
 * formats and line numbers as readJsonRecords.
 */
const CHUNK = 1 << 20;

function* chunks(file: string): Generator<string> {
  const fd = openSync(file, 'r');
  const buf = Buffer.allocUnsafe(CHUNK);
  const dec = new StringDecoder('utf8');
  try {
    for (let n = readSync(fd, buf, 0, CHUNK, null); n > 0; n = readSync(fd, buf, 0, CHUNK, null))
      yield dec.write(buf.subarray(0, n));
    const tail = dec.end();
    if (tail) yield tail;
  } finally {
    closeSync(fd);
  }
}

const parseAt = (file: string, line: number, text: string): unknown =>
  parseJsonAt(text, `${file}:${line}`, BenchmarkFormatError);

/** Up to `max` records of `file` (all when max is undefined), read lazily. */
export function* streamJsonRecords(file: string, max = Infinity): Generator<RawRecord> {
  if (max <= 0) return;
  let count = 0;
  let line = 1;
  let mode: 'start' | 'jsonl' | 'array' | 'done' = 'start';
  // JSONL: the current line's text; array: the current element's text.
  let cur = '';
  let curLine = 1;
  // Array scanner state: nesting depth inside the current element, string and escape flags.
  let depth = 0;
  let inString = false;
  let escaped = false;
  let inElement = false;
  let first = true;
  for (let text of chunks(file)) {
    if (first) {
      text = text.replace(/^\uFEFF/, '');
      first = false;
    }
    let i = 0;
    if (mode === 'start') {
      while (i < text.length && /\s/.test(text[i] as string)) {
        if (text[i] === '\n') line += 1;
        i += 1;
      }
      if (i === text.length) continue;
      if (text[i] === '[') {
        mode = 'array';
        i += 1;
      } else {
        mode = 'jsonl';
      }
    }
    if (mode === 'jsonl') {
      let start = i;
      for (; i < text.length; i++) {
        if (text.charCodeAt(i) !== 10) continue;
        const row = (cur + text.slice(start, i)).trim();
        cur = '';
        if (row.length > 0) {
          yield { line, value: parseAt(file, line, row) };
          if (++count >= max) return;
        }
        line += 1;
        start = i + 1;
      }
      cur += text.slice(start);
      continue;
    }
    if (mode !== 'array') continue;
    let start = inElement ? 0 : -1;
    for (; i < text.length; i++) {
      const c = text[i] as string;
      if (c === '\n') line += 1;
      if (!inElement) {
        if (c === ']') {
          mode = 'done';
          break;
        }
        if (c === ',' || c === ' ' || c === '\n' || c === '\r' || c === '\t') continue;
        inElement = true;
        start = i;
        curLine = line;
        depth = 0;
      }
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{' || c === '[') depth += 1;
      else if (c === '}' || c === ']') depth -= 1;
      const ends =
        !inString &&
        depth === 0 &&
        (c === '}' ||
          c === ']' ||
          c === '"' ||
          text[i + 1] === ',' ||
          text[i + 1] === ']' ||
          /\s/.test(text[i + 1] ?? ''));
      if (ends && !(c === '"' && start === i)) {
        const elem = cur + text.slice(start, i + 1);
        cur = '';
        inElement = false;
        yield { line: curLine, value: parseAt(file, curLine, elem) };
        if (++count >= max) return;
      }
    }
    if (inElement && start >= 0) cur += text.slice(start);
    if (mode === 'done') return;
  }
  if (mode === 'jsonl' && cur.trim().length > 0) {
    yield { line, value: parseAt(file, line, cur.trim()) };
    return;
  }
  if (mode === 'array') throw new BenchmarkFormatError(`${file}: not valid JSON (the array is not closed)`);
}
