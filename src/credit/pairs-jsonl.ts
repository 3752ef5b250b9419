import { existsSync } from 'node:fs';
import { writeFileAtomic } from '../fs/atomic.ts';
import { readJsonl } from '../fs/jsonl.ts';
import type { PreferencePair } from './first-error.ts';

/**
 * Preference pairs as JSONL for DPO, one pair per line. Writes are atomic (temp file
 * + rename); appending rewrites the whole file atomically so a crash never leaves a
 * torn last line.
 */
export function writePreferencePairs(file: string, pairs: readonly PreferencePair[]): void {
  writeFileAtomic(file, pairs.map((p) => `${JSON.stringify(p)}\n`).join(''));
}

export function readPreferencePairs(file: string): PreferencePair[] {
  return readJsonl(file).map(({ line, value }) => parsePreferencePair(value, `${file}:${line}`));
}

export function appendPreferencePairs(file: string, pairs: readonly PreferencePair[]): void {
  const existing = existsSync(file) ? readPreferencePairs(file) : [];
  writePreferencePairs(file, [...existing, ...pairs]);
}

/** A pair read from JSON, checked field by field; `where` prefixes the error (file:line). */
export function parsePreferencePair(v: unknown, where: string): PreferencePair {
  if (typeof v !== 'object' || v === null) throw new Error(`${where}: a pair must be a JSON object`);
  const o = v as Record<string, unknown>;
  if (!Array.isArray(o.prefix)) throw new Error(`${where}: field 'prefix' must be an array of messages`);
  o.prefix.forEach((m: unknown, j) => {
    const r = m as Record<string, unknown> | null;
    if (typeof r !== 'object' || r === null || typeof r.role !== 'string' || typeof r.content !== 'string')
      throw new Error(`${where}: prefix[${j}] must be {role, content} strings`);
  });
  for (const k of ['chosen', 'rejected'] as const)
    if (typeof o[k] !== 'string') throw new Error(`${where}: field '${k}' must be a string`);
  if (typeof o.metadata !== 'object' || o.metadata === null)
    throw new Error(`${where}: field 'metadata' must be an object`);
  return v as PreferencePair;
}
