import { z } from 'zod';
import type { Episode } from '../episode.ts';
import { parseRecord, rawRecords } from './records.ts';

/**
 * WebWalkerQA (Wu et al., 2025; callanwu/WebWalkerQA) JSONL: question, answer, root_url and info
 * {source_website, golden_path, type, difficulty_level, lang, domain}. Releases differ in key case
 * ("Question" / "question"), so keys are matched case-insensitively.
 */

const infoSchema = z
  .object({
    type: z.string().optional(),
    difficulty_level: z.string().optional(),
    lang: z.string().optional(),
    domain: z.string().optional(),
    source_website: z.union([z.string(), z.array(z.string())]).optional(),
    golden_path: z.array(z.string()).optional(),
  })
  .optional();

const recordSchema = z.object({
  id: z.union([z.string(), z.number()]).transform(String).optional(),
  question: z.string().min(1),
  answer: z.union([z.string(), z.number()]).transform(String),
  root_url: z.string().optional(),
  info: infoSchema,
});

/** Keys lowercased at the top level and inside `info`. */
function lowerKeys(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const lk = k.toLowerCase();
    out[lk] = lk === 'info' ? lowerKeys(x) : x;
  }
  return out;
}

export function readWebWalker(file: string, max?: number): Episode[] {
  return rawRecords(file, max).map((rec, k) => {
    const r = parseRecord(recordSchema, { line: rec.line, value: lowerKeys(rec.value) }, file);
    const meta: Record<string, string | number | boolean | string[]> = {};
    if (r.root_url !== undefined) meta.rootUrl = r.root_url;
    const info = r.info ?? {};
    if (info.type !== undefined) meta.type = info.type;
    if (info.difficulty_level !== undefined) meta.difficulty = info.difficulty_level;
    if (info.lang !== undefined) meta.lang = info.lang;
    if (info.domain !== undefined) meta.domain = info.domain;
    if (info.golden_path !== undefined) meta.goldenPath = info.golden_path;
    // Releases carry no id: the record's position names it, stable for a given file.
    return { id: r.id ?? `webwalker-${k}`, question: r.question, answers: [r.answer], paragraphs: [], meta };
  });
}
