import type { Episode } from '../src/data/episode.ts';

/** A planted claim on hop 0 (Ada Brin's birth year) as src/data/synth/misleading.ts writes it into meta.planted. */
export const plantedClaim = (wrong: string, right: string): string =>
  JSON.stringify({ hop: 0, subject: 'Ada Brin', relation: 'birthYear', wrong, right, paragraph_idx: 3 });

/** A comparison episode (Ada Brin born 1950, Bo Cade 1962), with meta.planted when `planted` is given. */
export const comparisonEpisode = (id: string, planted?: string): Episode => ({
  id,
  question: 'Who was born first, Ada Brin or Bo Cade?',
  answers: ['Ada Brin'],
  paragraphs: [],
  decomposition: [
    { id: 1, question: 'In what year was Ada Brin born?', answer: '1950', paragraphSupportIdx: 0 },
    { id: 2, question: 'In what year was Bo Cade born?', answer: '1962', paragraphSupportIdx: 1 },
    {
      id: 3,
      question: 'Who was born first, Ada Brin (born in #1) or Bo Cade (born in #2)?',
      answer: 'Ada Brin',
      paragraphSupportIdx: null,
    },
  ],
  meta: planted ? { planted } : {},
});
