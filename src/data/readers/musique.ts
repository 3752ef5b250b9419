import { z } from 'zod';
import type { Episode } from '../episode.ts';
import { readRecords } from './records.ts';

/**
 * MuSiQue reader (`musique_{ans,full}_v1.0_{train,dev,test}.jsonl`, Trivedi et al., TACL 2022).
 * The full version holds each question twice (answerable and not, same id).
 * The test split hides answer, aliases, answerable and decomposition, so those are optional here;
 * the scorer requires them.
 */

const musiqueParagraphSchema = z.object({
  idx: z.number().int(),
  title: z.string(),
  paragraph_text: z.string(),
  is_supporting: z.boolean().optional(),
});

const musiqueRecordSchema = z.object({
  id: z.string().min(1),
  paragraphs: z.array(musiqueParagraphSchema),
  question: z.string(),
  question_decomposition: z
    .array(
      z.object({
        id: z.number().int(),
        question: z.string(),
        answer: z.string(),
        paragraph_support_idx: z.number().int().nullable(),
      }),
    )
    .optional(),
  answer: z.string().optional(),
  answer_aliases: z.array(z.string()).optional(),
  answerable: z.boolean().optional(),
  /** The synthetic world's planted wrong claim (src/data/synth/record.ts plantedSchema); not in the official files. */
  planted: z.record(z.string(), z.unknown()).optional(),
});

export type MusiqueRecord = z.infer<typeof musiqueRecordSchema>;

/** Hop count from the id prefix: "2hop__", "3hop1__", "4hop3__" (the prefix names the graph shape). */
export function hopsFromId(id: string): number | null {
  const m = /^(\d+)hop/.exec(id);
  return m ? Number(m[1]) : null;
}

/** One record to the engine's Episode; unanswerable items get no gold answers (Episode contract). */
export function musiqueToEpisode(r: MusiqueRecord): Episode {
  const answerable = r.answerable ?? true;
  const answers = answerable && r.answer !== undefined ? [r.answer, ...(r.answer_aliases ?? [])] : [];
  const hops = hopsFromId(r.id);
  const meta: Record<string, string | number | boolean | string[]> = {};
  if (hops !== null) meta.hops = hops;
  meta.hopType = r.id.split('__')[0];
  if (r.planted !== undefined) meta.planted = JSON.stringify(r.planted);
  const ep: Episode = {
    id: r.id,
    question: r.question,
    answers,
    paragraphs: r.paragraphs.map((p) => ({
      idx: p.idx,
      title: p.title,
      text: p.paragraph_text,
      ...(p.is_supporting !== undefined ? { isSupporting: p.is_supporting } : {}),
    })),
    meta,
  };
  if (r.answerable !== undefined) ep.answerable = r.answerable;
  if (r.question_decomposition) {
    ep.decomposition = r.question_decomposition.map((d) => ({
      id: d.id,
      question: d.question,
      answer: d.answer,
      paragraphSupportIdx: d.paragraph_support_idx,
    }));
  }
  return ep;
}

/** Raw records in file order, validated. */
export function readMusiqueRecords(file: string, max?: number): Array<{ line: number; record: MusiqueRecord }> {
  return readRecords(file, musiqueRecordSchema, max);
}

/** Episodes of a MuSiQue ans or full file, in file order. */
export function readMusique(file: string, max?: number): Episode[] {
  return readMusiqueRecords(file, max).map((r) => musiqueToEpisode(r.record));
}
