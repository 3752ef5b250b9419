import { z } from 'zod';
import { readMusiqueRecords } from '../data/readers/musique.ts';
import { BenchmarkFormatError, readRecords } from '../data/readers/records.ts';
import { evaluateMusique, type MusiqueGold, type MusiqueMetrics, type MusiquePrediction } from './metrics/musique.ts';

/**
 * Scores a MuSiQue predictions file against a gold file as evaluate_v1.0.py does (same checks, same
 * numbers), so `sharp eval` and its tests can compare against the official evaluator.
 */

const musiquePredictionSchema = z.object({
  id: z.string(),
  predicted_answer: z.string(),
  predicted_support_idxs: z.array(z.number().int()),
  // Python compares with ==, so 0/1 work where the official file has booleans.
  predicted_answerable: z.union([z.boolean(), z.literal(0), z.literal(1)]).transform((v) => v === true || v === 1),
});

/** Gold lines reduced to what the evaluator reads; missing answer fields (test split) are errors. */
function readMusiqueGold(file: string): MusiqueGold[] {
  return readMusiqueRecords(file).map(({ line, record: r }) => {
    const missing =
      r.answer === undefined
        ? 'answer'
        : r.answer_aliases === undefined
          ? 'answer_aliases'
          : r.answerable === undefined
            ? 'answerable'
            : null;
    if (missing)
      throw new BenchmarkFormatError(`${file}:${line}: ${missing}: missing (a test-split file cannot be scored)`);
    const noFlag = r.paragraphs.findIndex((p) => p.is_supporting === undefined);
    if (noFlag >= 0) throw new BenchmarkFormatError(`${file}:${line}: paragraphs[${noFlag}].is_supporting: missing`);
    return {
      id: r.id,
      answers: [r.answer ?? '', ...(r.answer_aliases ?? [])],
      supportIdx: r.paragraphs.filter((p) => p.is_supporting === true).map((p) => p.idx),
      answerable: r.answerable ?? true,
    };
  });
}

function readMusiquePredictions(file: string): MusiquePrediction[] {
  return readRecords(file, musiquePredictionSchema).map((r) => r.record);
}

/** `python evaluate_v1.0.py predFile goldFile`, in TypeScript. */
export function scoreMusique(goldFile: string, predFile: string): MusiqueMetrics {
  return evaluateMusique(readMusiqueGold(goldFile), readMusiquePredictions(predFile));
}
