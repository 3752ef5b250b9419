import { z } from 'zod';
import type { Episode } from '../episode.ts';
import { BenchmarkFormatError, readRecords } from './records.ts';

/**
 * DocMath-Eval (Zhao et al., ACL 2024; yale-nlp/DocMath-Eval) JSON: question_id, question,
 * paragraphs (text and markdown tables), table_evidence / paragraph_evidence (indices into
 * paragraphs), python_solution and ground_truth (a number or a boolean; hidden on the test split).
 */

const docmathSchema = z.object({
  question_id: z.union([z.string(), z.number()]).transform(String),
  question: z.string().min(1),
  paragraphs: z.array(z.string()),
  source: z.string().optional(),
  table_evidence: z.array(z.number().int()).optional(),
  paragraph_evidence: z.array(z.number().int()).optional(),
  python_solution: z.string().optional(),
  ground_truth: z.union([z.number(), z.boolean()]).optional(),
});

/** The gold as display text (JSON.parse cannot tell 12.0 from 12; the metric uses meta.groundTruth). */
function goldText(v: number | boolean): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return String(v);
}

export function readDocMath(file: string, max?: number): Episode[] {
  return readRecords(file, docmathSchema, max).map(({ line, record: r }) => {
    const evidence = new Set([...(r.table_evidence ?? []), ...(r.paragraph_evidence ?? [])]);
    for (const e of evidence)
      if (e < 0 || e >= r.paragraphs.length)
        throw new BenchmarkFormatError(
          `${file}:${line}: table_evidence/paragraph_evidence: index ${e} outside ` +
            `paragraphs[0..${r.paragraphs.length - 1}]`,
        );
    const meta: Record<string, string | number | boolean | string[]> = {};
    if (r.ground_truth !== undefined) meta.groundTruth = r.ground_truth;
    // The subset (simpshort, simplong, compshort, complong) leads the question id.
    const subset = /^(simpshort|simplong|compshort|complong)/i.exec(r.question_id);
    if (subset) meta.subset = subset[1].toLowerCase();
    if (r.source !== undefined) meta.source = r.source;
    return {
      id: r.question_id,
      question: r.question,
      answers: r.ground_truth !== undefined ? [goldText(r.ground_truth)] : [],
      paragraphs: r.paragraphs.map((text, idx) => ({
        idx,
        title: `${r.question_id} #${idx}`,
        text,
        ...(evidence.size > 0 ? { isSupporting: evidence.has(idx) } : {}),
      })),
      meta,
    };
  });
}

/** The numeric or boolean gold an episode from readDocMath carries. */
export function docmathGold(ep: Episode): number | boolean {
  const g = ep.meta?.groundTruth;
  if (typeof g !== 'number' && typeof g !== 'boolean')
    throw new BenchmarkFormatError(`episode ${ep.id}: no ground_truth (test split?) — cannot score`);
  return g;
}
