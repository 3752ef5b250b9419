/**
 * Writes the shipped retrieval sample (data/retrieval/, docs/retrieval.md): 40 synthetic multi-hop
 * questions in the MuSiQue format, each over a world of its own (`sharp data synth --worlds fresh`),
 * and their 20 paragraphs each pooled into one corpus in Search-R1's JSONL format
 * ({"id", "contents": "\"Title\"\ntext"}), so `sharp index build` and `sharp eval --index` run on a
 * fresh clone. Deterministic: `npx tsx scripts/retrieval-sample.ts` rewrites the same bytes.
 */
import { join, resolve } from 'node:path';
import { generateSynth } from '../src/data/synth/generate.ts';
import { writeJsonlAtomic } from '../src/fs/atomic.ts';
import { poolParagraphs } from '../src/tools/search.ts';
import { toContents } from '../src/tools/retrieval/contents.ts';
import { musiqueToEpisode } from '../src/data/readers/musique.ts';

const OUT = resolve(import.meta.dirname, '../data/retrieval');
const records = generateSynth({ seed: 44, n: 40, minHops: 2, maxHops: 4, worlds: 'fresh' });
const pooled = poolParagraphs(records.map((r) => musiqueToEpisode(r)));
writeJsonlAtomic(join(OUT, 'synth_questions.jsonl'), records);
writeJsonlAtomic(
  join(OUT, 'synth_corpus.jsonl'),
  pooled.paragraphs.map((p) => ({ id: String(p.idx), contents: toContents(p) })),
);
process.stdout.write(`${records.length} questions, ${pooled.paragraphs.length} passages in ${OUT}\n`);
