import { z } from 'zod';
import type { Episode } from '../episode.ts';
import { musiqueToEpisode } from '../readers/musique.ts';

/**
 * The MuSiQue record format (Trivedi et al., TACL 2022), exactly as the official
 * `musique_ans_v1.0_*.jsonl` files write it, and its mapping to an Episode. The synthetic world
 * writes this format so that every reader, metric and script that takes MuSiQue takes it too.
 */

/* The reader in ../readers/musique.ts is lenient (the test split hides fields); these schemas are
   strict: every field present, no extra keys, as the answerable train/dev files write them. */
export const strictParagraphSchema = z.strictObject({
  idx: z.number().int().nonnegative(),
  title: z.string().min(1),
  paragraph_text: z.string().min(1),
  is_supporting: z.boolean(),
});

export const strictHopSchema = z.strictObject({
  id: z.number().int().nonnegative(),
  /** May reference earlier hops' answers as #1, #2, ... */
  question: z.string().min(1),
  answer: z.string(),
  /** null only for hops no paragraph supports (our arithmetic hops). */
  paragraph_support_idx: z.number().int().nonnegative().nullable(),
});

/** The official record format (validated against real MuSiQue-Ans records in the tests). */
export const strictMusiqueRecordSchema = z.strictObject({
  /** `<shape>__<hop id>_<hop id>...`, shape one of 2hop, 3hop1, 3hop2, 4hop1, 4hop2, 4hop3. */
  id: z.string().regex(/^(2hop|3hop1|3hop2|4hop1|4hop2|4hop3)__\d+(?:_\d+)+$/),
  paragraphs: z.array(strictParagraphSchema).min(1),
  question: z.string().min(1),
  question_decomposition: z.array(strictHopSchema).min(2).max(4),
  answer: z.string(),
  answer_aliases: z.array(z.string()),
  answerable: z.boolean(),
});

export type StrictMusiqueRecord = z.infer<typeof strictMusiqueRecordSchema>;

/**
 * The format plus the consistency the synthetic generator guarantees: hop count and hop ids as the id
 * says, idx = position, is_supporting = the cited support paragraphs, answer = the last hop's answer.
 */
export const synthRecordSchema = strictMusiqueRecordSchema.superRefine((r, ctx) => {
  const hops = Number(/^(\d)hop/.exec(r.id)?.[1]);
  if (hops !== r.question_decomposition.length) {
    ctx.addIssue({ code: 'custom', message: `id says ${hops} hops, question_decomposition has ${r.question_decomposition.length}` });
  }
  const ids = r.id.split('__')[1]?.split('_').map(Number) ?? [];
  if (ids.join() !== r.question_decomposition.map((h) => h.id).join()) {
    ctx.addIssue({ code: 'custom', message: `id's hop ids ${ids.join('_')} differ from question_decomposition ids` });
  }
  r.paragraphs.forEach((p, i) => {
    if (p.idx !== i) ctx.addIssue({ code: 'custom', message: `paragraphs[${i}].idx is ${p.idx}, expected ${i}` });
  });
  const supporting = new Set(r.paragraphs.filter((p) => p.is_supporting).map((p) => p.idx));
  const cited = new Set(r.question_decomposition.flatMap((h) => (h.paragraph_support_idx === null ? [] : [h.paragraph_support_idx])));
  if ([...supporting].sort().join() !== [...cited].sort().join()) {
    ctx.addIssue({ code: 'custom', message: 'is_supporting flags differ from the paragraph_support_idx values' });
  }
  if (r.answerable && r.answer !== r.question_decomposition[r.question_decomposition.length - 1]?.answer) {
    ctx.addIssue({ code: 'custom', message: 'answer differs from the last hop answer' });
  }
});

/**
 * A synthetic record as the engine's Episode: answers = [answer, ...aliases]. The mapping is the
 * MuSiQue reader's (one mapping for real and synthetic data), plus `meta.arithmetic` (the question
 * has a hop no paragraph supports).
 */
export function toEpisode(record: StrictMusiqueRecord): Episode {
  const ep = musiqueToEpisode(record);
  ep.meta = { ...ep.meta, arithmetic: record.question_decomposition.some((h) => h.paragraph_support_idx === null) };
  return ep;
}
