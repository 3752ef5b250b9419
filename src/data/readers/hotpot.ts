import { z } from 'zod';
import type { Episode } from '../episode.ts';
import { BenchmarkFormatError, readRecords } from './records.ts';

/**
 * HotpotQA distractor (Yang et al., EMNLP 2018) and 2WikiMultiHopQA (Ho et al., COLING 2020)
 * readers: one JSON array (official) or JSONL. Both give `context` as [title, sentences[]] pairs and
 * sentence-level `supporting_facts` [title, sentence index]; 2Wiki adds `evidences` triples.
 * The test splits hide answer, supporting facts, type and level, so those are optional here.
 */

const hotpotRecordSchema = z.object({
  _id: z.string().min(1),
  question: z.string(),
  answer: z.string().optional(),
  supporting_facts: z.array(z.tuple([z.string(), z.number().int()])).optional(),
  context: z.array(z.tuple([z.string(), z.array(z.string())])),
  type: z.string().optional(),
  level: z.string().optional(),
});

const twoWikiRecordSchema = hotpotRecordSchema.extend({
  evidences: z.array(z.tuple([z.string(), z.string(), z.string()])).optional(),
  answer_id: z.string().optional(),
  evidences_id: z.array(z.array(z.string())).optional(),
});

type HotpotRecord = z.infer<typeof hotpotRecordSchema>;
type TwoWikiRecord = z.infer<typeof twoWikiRecordSchema>;

/** A supporting fact: paragraph title and sentence index. */
export type SupportingFact = [string, number];

/**
 * Sentences joined into the paragraph text. HotpotQA sentences carry their leading space (the
 * official text is `''.join(sentences)`); 2Wiki's do not, so a space is added only where neither
 * side has one.
 */
export function joinSentences(sentences: readonly string[]): string {
  let out = '';
  for (const s of sentences) {
    if (out.length > 0 && s.length > 0 && !/\s$/.test(out) && !/^\s/.test(s)) out += ' ';
    out += s;
  }
  return out.trim();
}

function toEpisode(r: HotpotRecord, extra: Record<string, string>): Episode {
  const sp = r.supporting_facts ?? [];
  const spTitles = new Set(sp.map(([t]) => t));
  const meta: Record<string, string | number | boolean | string[]> = {
    // JSON strings: Episode.meta holds only flat values; read them back with the accessors below.
    supportingFacts: JSON.stringify(sp),
    sentenceCounts: JSON.stringify(r.context.map(([, s]) => s.length)),
    ...extra,
  };
  if (r.type !== undefined) meta.type = r.type;
  if (r.level !== undefined) meta.level = r.level;
  return {
    id: r._id,
    question: r.question,
    answers: r.answer !== undefined ? [r.answer] : [],
    paragraphs: r.context.map(([title, sentences], idx) => ({
      idx,
      title,
      text: joinSentences(sentences),
      ...(r.supporting_facts ? { isSupporting: spTitles.has(title) } : {}),
    })),
    meta,
  };
}

function hotpotToEpisode(r: HotpotRecord): Episode {
  return toEpisode(r, {});
}

function twoWikiToEpisode(r: TwoWikiRecord): Episode {
  const extra: Record<string, string> = {};
  if (r.evidences) extra.evidences = JSON.stringify(r.evidences);
  if (r.answer_id !== undefined) extra.answerId = r.answer_id;
  return toEpisode(r, extra);
}

export function readHotpot(file: string, max?: number): Episode[] {
  return readRecords(file, hotpotRecordSchema, max).map((r) => hotpotToEpisode(r.record));
}

export function readTwoWiki(file: string, max?: number): Episode[] {
  return readRecords(file, twoWikiRecordSchema, max).map((r) => twoWikiToEpisode(r.record));
}

function metaJson(ep: Episode, key: string): unknown {
  const v = ep.meta?.[key];
  if (typeof v !== 'string')
    throw new BenchmarkFormatError(`episode ${ep.id}: meta.${key} missing (not read by the HotpotQA/2Wiki reader)`);
  return JSON.parse(v) as unknown;
}

/** Gold supporting facts of an episode read by these readers. */
export function goldSupportingFacts(ep: Episode): SupportingFact[] {
  return metaJson(ep, 'supportingFacts') as SupportingFact[];
}

/** Gold evidence triples (2Wiki), [] when absent. */
export function goldEvidences(ep: Episode): Array<[string, string, string]> {
  return typeof ep.meta?.evidences === 'string'
    ? (JSON.parse(ep.meta.evidences) as Array<[string, string, string]>)
    : [];
}

/**
 * Sentence-level supporting facts for paragraph-level support: every sentence of each cited
 * paragraph (the agents cite paragraphs, the official sp metric counts sentences).
 */
export function supportingFactsFromIdx(ep: Episode, idxs: readonly number[]): SupportingFact[] {
  const counts = metaJson(ep, 'sentenceCounts') as number[];
  const out: SupportingFact[] = [];
  const seen = new Set<number>();
  for (const idx of idxs) {
    const p = ep.paragraphs.find((q) => q.idx === idx);
    if (!p || seen.has(idx)) continue;
    seen.add(idx);
    for (let s = 0; s < (counts[idx] ?? 0); s++) out.push([p.title, s]);
  }
  return out;
}
