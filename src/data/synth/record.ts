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
const strictParagraphSchema = z.strictObject({
  idx: z.number().int().nonnegative(),
  title: z.string().min(1),
  paragraph_text: z.string().min(1),
  is_supporting: z.boolean(),
});

const strictHopSchema = z.strictObject({
  id: z.number().int().nonnegative(),
  /** May reference earlier hops' answers as #1, #2, ... */
  question: z.string().min(1),
  answer: z.string(),
  /** null only for hops no paragraph supports (our arithmetic hops). */
  paragraph_support_idx: z.number().int().nonnegative().nullable(),
});

/** The official record format (validated against real MuSiQue-Ans records in the tests). */
export const strictMusiqueRecordSchema = z.strictObject({
  /**
   * `<shape>__<hop id>_<hop id>...`, shape one of MuSiQue's 2hop, 3hop1, 3hop2, 4hop1, 4hop2, 4hop3,
   * or the synthetic world's comparisons and aggregations 3hopcmp, 4hopcmp, 3hopagg, 4hopagg (MuSiQue
   * has no comparison questions; the prefix still starts with the hop count).
   */
  id: z.string().regex(/^(2hop|3hop1|3hop2|4hop1|4hop2|4hop3|3hopcmp|4hopcmp|3hopagg|4hopagg)__\d+(?:_\d+)+$/),
  paragraphs: z.array(strictParagraphSchema).min(1),
  question: z.string().min(1),
  question_decomposition: z.array(strictHopSchema).min(2).max(4),
  answer: z.string(),
  answer_aliases: z.array(z.string()),
  answerable: z.boolean(),
});

export type StrictMusiqueRecord = z.infer<typeof strictMusiqueRecordSchema>;

/**
 * A planted wrong claim (misleading.ts): which gold hop's fact it contradicts, the wrong value it
 * states, and the paragraph that states it. Written into the record as `planted`, a key the
 * official files do not have (readers of MuSiQue ignore it; ours keeps it in `Episode.meta`).
 */
const plantedSchema = z.strictObject({
  /** 0-based index into question_decomposition. */
  hop: z.number().int().nonnegative(),
  /** The entity the claim is about (its encyclopedia paragraph's title). */
  subject: z.string().min(1),
  relation: z.string().min(1),
  /** The value the planted paragraph states. */
  wrong: z.string().min(1),
  /** The hop's gold answer. */
  right: z.string().min(1),
  /** `idx` of the planted paragraph. */
  paragraph_idx: z.number().int().nonnegative(),
});

/** A synthetic record: the official format, plus a planted claim where one was planted. */
const synthBaseSchema = strictMusiqueRecordSchema.extend({ planted: plantedSchema.optional() });

export type SynthRecord = z.infer<typeof synthBaseSchema>;

/**
 * The format plus the consistency the synthetic generator guarantees: hop count and hop ids as the id
 * says, idx = position, is_supporting = the cited support paragraphs, answer = the last hop's answer.
 */
export const synthRecordSchema = synthBaseSchema.superRefine((r, ctx) => {
  const hops = Number(/^(\d)hop/.exec(r.id)?.[1]);
  if (hops !== r.question_decomposition.length) {
    ctx.addIssue({
      code: 'custom',
      message: `id says ${hops} hops, question_decomposition has ${r.question_decomposition.length}`,
    });
  }
  const ids = r.id.split('__')[1]?.split('_').map(Number) ?? [];
  if (ids.join() !== r.question_decomposition.map((h) => h.id).join()) {
    ctx.addIssue({ code: 'custom', message: `id's hop ids ${ids.join('_')} differ from question_decomposition ids` });
  }
  r.paragraphs.forEach((p, i) => {
    if (p.idx !== i) ctx.addIssue({ code: 'custom', message: `paragraphs[${i}].idx is ${p.idx}, expected ${i}` });
  });
  const supporting = new Set(r.paragraphs.filter((p) => p.is_supporting).map((p) => p.idx));
  const cited = new Set(
    r.question_decomposition.flatMap((h) => (h.paragraph_support_idx === null ? [] : [h.paragraph_support_idx])),
  );
  if ([...supporting].sort().join() !== [...cited].sort().join()) {
    ctx.addIssue({ code: 'custom', message: 'is_supporting flags differ from the paragraph_support_idx values' });
  }
  if (r.answerable && r.answer !== r.question_decomposition[r.question_decomposition.length - 1]?.answer) {
    ctx.addIssue({ code: 'custom', message: 'answer differs from the last hop answer' });
  }
  if (r.planted) {
    const hop = r.question_decomposition[r.planted.hop];
    const para = r.paragraphs[r.planted.paragraph_idx];
    if (!hop || hop.paragraph_support_idx === null || hop.answer !== r.planted.right)
      ctx.addIssue({
        code: 'custom',
        message: `planted.hop ${r.planted.hop} is not a fact hop answered '${r.planted.right}'`,
      });
    if (r.planted.wrong === r.planted.right)
      ctx.addIssue({ code: 'custom', message: 'planted.wrong equals the gold answer' });
    if (!para || para.is_supporting || !para.paragraph_text.includes(r.planted.wrong))
      ctx.addIssue({
        code: 'custom',
        message:
          `planted.paragraph_idx ${r.planted.paragraph_idx} is not a non-supporting paragraph stating ` +
          `'${r.planted.wrong}'`,
      });
  }
});

/** A planted claim as the engine's episodes carry it (camelCase). */
export interface PlantedClaim {
  hop: number;
  subject: string;
  relation: string;
  wrong: string;
  right: string;
  paragraphIdx: number;
}

/**
 * The planted claim of an episode (`meta.planted`, a JSON string, since Episode.meta holds flat
 * values), or null when none was planted. A malformed value is a bug upstream and throws.
 */
export function plantedOf(episode: Pick<Episode, 'id' | 'meta'>): PlantedClaim | null {
  const raw = episode.meta?.['planted'];
  if (raw === undefined) return null;
  let value: unknown;
  try {
    value = JSON.parse(String(raw));
  } catch {
    throw new Error(`episode ${episode.id}: meta.planted is not JSON`);
  }
  const parsed = plantedSchema.safeParse(value);
  if (!parsed.success)
    throw new Error(`episode ${episode.id}: meta.planted: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  const p = parsed.data;
  return {
    hop: p.hop,
    subject: p.subject,
    relation: p.relation,
    wrong: p.wrong,
    right: p.right,
    paragraphIdx: p.paragraph_idx,
  };
}

/**
 * A synthetic record as the engine's Episode: answers = [answer, ...aliases]. The mapping is the
 * MuSiQue reader's (one mapping for real and synthetic data), plus `meta.arithmetic` (the question
 * has a hop no paragraph supports).
 */
export function toEpisode(record: SynthRecord): Episode {
  const ep = musiqueToEpisode(record);
  ep.meta = { ...ep.meta, arithmetic: record.question_decomposition.some((h) => h.paragraph_support_idx === null) };
  return ep;
}
