import { z } from 'zod';
import type { Episode } from '../episode.ts';
import { readRecords } from './records.ts';

/**
 * GAIA (Mialon et al., 2023) metadata.jsonl: task_id, Question, Level, Final answer, file_name,
 * Annotator Metadata. Our agents read no attachments, so by default only text-only tasks (empty
 * file_name) are kept. The test split's answers are hidden ("?").
 */

const gaiaSchema = z.object({
  task_id: z.string().min(1),
  Question: z.string().min(1),
  Level: z.union([z.number().int(), z.string().regex(/^\d+$/)]).transform((v) => Number(v)),
  'Final answer': z.string(),
  file_name: z.string().optional().default(''),
  'Annotator Metadata': z.record(z.string(), z.unknown()).optional(),
});

export interface GaiaOptions {
  /** Keep only tasks without an attached file (default true). */
  textOnly?: boolean;
}

export function readGaia(file: string, opts: GaiaOptions = {}): Episode[] {
  const textOnly = opts.textOnly ?? true;
  return readRecords(file, gaiaSchema)
    .map(({ record: r }) => r)
    .filter((r) => !textOnly || r.file_name === '')
    .map((r) => {
      const meta: Record<string, string | number | boolean | string[]> = { level: r.Level };
      if (r.file_name !== '') meta.fileName = r.file_name;
      const tools = r['Annotator Metadata']?.Tools;
      if (typeof tools === 'string') meta.tools = tools;
      return { id: r.task_id, question: r.Question, answers: [r['Final answer']], paragraphs: [], meta };
    });
}
