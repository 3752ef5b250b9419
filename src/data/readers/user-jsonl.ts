import { z } from 'zod';
import { UserError } from '../../errors.ts';
import type { Episode } from '../episode.ts';
import { BenchmarkFormatError, fieldPath, rawRecords, type RawRecord } from './records.ts';

/**
 * A user's own questions (`data.source: jsonl`, `sharp eval --bench jsonl`; docs/extending.md): one
 * JSON object per line,
 *
 *   {"id": "q1", "question": "...", "answers": ["Paris", "City of Paris"],
 *    "paragraphs": [{"title": "...", "text": "...", "is_supporting": true}],
 *    "decomposition": [{"question": "...", "answer": "..."}]}
 *
 * with `answer` + optional `answer_aliases` (as MuSiQue writes them) instead of `answers`. Unknown
 * keys are errors: a misspelt optional key would otherwise drop its data without a word. Every
 * problem is a UserError of one line, `FILE:LINE: reason`, so the command exits 2 pointing at the line.
 */

const text = (what: string) => z.string({ error: `expected ${what}` });
const nonEmpty = (what: string) => text(what).min(1, { error: `expected ${what}` });

const paragraphSchema = z.strictObject({
  title: text('a string'),
  text: text('a string'),
  is_supporting: z.boolean({ error: 'expected true or false' }).optional(),
});

const hopSchema = z.strictObject({
  question: nonEmpty('a non-empty string'),
  answer: nonEmpty('a non-empty string'),
});

const recordSchema = z.strictObject(
  {
    id: nonEmpty('a non-empty string'),
    question: nonEmpty('a non-empty string'),
    answers: z.array(nonEmpty('a non-empty string'), { error: 'expected a list of strings' }).optional(),
    answer: nonEmpty('a non-empty string').optional(),
    answer_aliases: z.array(nonEmpty('a non-empty string'), { error: 'expected a list of strings' }).optional(),
    paragraphs: z.array(paragraphSchema, { error: 'expected a list of {title, text, is_supporting?}' }).optional(),
    decomposition: z.array(hopSchema, { error: 'expected a list of {question, answer}' }).optional(),
  },
  { error: 'expected a JSON object {id, question, answers, ...}' },
);

type UserRecord = z.infer<typeof recordSchema>;

/** The keys a record may hold, for the message about an unknown one. */
const KEYS = Object.keys(recordSchema.shape).join(', ');

/** Why a record's answers are not usable, or undefined: exactly one of answers / answer must give them. */
function answersProblem(r: UserRecord): string | undefined {
  if (r.answers !== undefined && (r.answer !== undefined || r.answer_aliases !== undefined))
    return 'give either answers or answer (+ answer_aliases), not both';
  if (r.answer_aliases !== undefined && r.answer === undefined) return 'answer_aliases: needs answer';
  if (r.answers === undefined && r.answer === undefined)
    return 'no gold answer: give answers (a list) or answer (+ answer_aliases)';
  if (r.answers !== undefined && r.answers.length === 0) return 'answers: expected at least one answer';
  return undefined;
}

/** One validated line, or a one-line UserError naming the file, the line and what is wrong. */
function parseUserRecord(rec: RawRecord, file: string): UserRecord {
  const where = `${file}:${rec.line}`;
  const r = recordSchema.safeParse(rec.value);
  if (!r.success) {
    const issue = r.error.issues[0];
    if (issue.code === 'unrecognized_keys')
      throw new UserError(`${where}: unknown key '${issue.keys[0]}' (a record holds ${KEYS})`);
    const field = issue.path.length > 0 ? `${fieldPath(issue.path)}: ` : '';
    throw new UserError(`${where}: ${field}${issue.message}`);
  }
  const problem = answersProblem(r.data);
  if (problem) throw new UserError(`${where}: ${problem}`);
  return r.data;
}

/**
 * One record as the engine's Episode: gold answer first, then aliases; paragraphs numbered by their
 * position (the idx the search tool reports and support metrics compare); hops numbered from 1, with
 * no supporting paragraph named (the format has none).
 */
function userRecordToEpisode(r: UserRecord): Episode {
  const ep: Episode = {
    id: r.id,
    question: r.question,
    answers: r.answers ?? [r.answer as string, ...(r.answer_aliases ?? [])],
    paragraphs: (r.paragraphs ?? []).map((p, idx) => ({
      idx,
      title: p.title,
      text: p.text,
      ...(p.is_supporting !== undefined ? { isSupporting: p.is_supporting } : {}),
    })),
  };
  if (r.decomposition)
    ep.decomposition = r.decomposition.map((d, i) => ({
      id: i + 1,
      question: d.question,
      answer: d.answer,
      paragraphSupportIdx: null,
    }));
  return ep;
}

/**
 * Episodes of a user JSONL file in file order (with `max`, the first `max`, the rest unread). An id
 * may occur once: predictions, credit records and resumes are keyed by it.
 */
export function readUserJsonl(file: string, max?: number): Episode[] {
  let raw: RawRecord[];
  try {
    raw = rawRecords(file, max);
  } catch (err) {
    // Not JSON, or no file: the same one line, as a user error.
    if (err instanceof BenchmarkFormatError) throw new UserError(err.message);
    throw err;
  }
  const lineOf = new Map<string, number>();
  return raw.map((rec) => {
    const r = parseUserRecord(rec, file);
    const earlier = lineOf.get(r.id);
    if (earlier !== undefined) throw new UserError(`${file}:${rec.line}: id '${r.id}' is already on line ${earlier}`);
    lineOf.set(r.id, rec.line);
    return userRecordToEpisode(r);
  });
}
