import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { strictMusiqueRecordSchema, synthRecordSchema, toEpisode, type StrictMusiqueRecord } from './record.ts';

const record: StrictMusiqueRecord = {
  id: '2hop__10001_10002',
  paragraphs: [
    { idx: 0, title: 'Kozhar', paragraph_text: 'Kozhar is a city located in Vlenia.', is_supporting: true },
    { idx: 1, title: 'Zorvex Labs', paragraph_text: 'Zorvex Labs is headquartered in Kozhar.', is_supporting: true },
    { idx: 2, title: 'Skarv', paragraph_text: 'Skarv is a city located in Vlenia.', is_supporting: false },
  ],
  question: 'In which country is the city where Zorvex Labs is headquartered located?',
  question_decomposition: [
    { id: 10001, question: 'In which city is Zorvex Labs headquartered?', answer: 'Kozhar', paragraph_support_idx: 1 },
    { id: 10002, question: 'In which country is #1 located?', answer: 'Vlenia', paragraph_support_idx: 0 },
  ],
  answer: 'Vlenia',
  answer_aliases: ['Republic of Vlenia'],
  answerable: true,
};

describe('MuSiQue record schemas', () => {
  it('accepts a well-formed record', () => {
    expect(synthRecordSchema.parse(record)).toEqual(record);
  });

  it('rejects extra keys, missing fields and inconsistent records with the offending path', () => {
    const extra = strictMusiqueRecordSchema.safeParse({ ...record, type: 'compose' });
    expect(extra.success).toBe(false);
    expect(extra.error?.issues[0]?.code).toBe('unrecognized_keys');
    const { answerable: _drop, ...missing } = record;
    expect(strictMusiqueRecordSchema.safeParse(missing).error?.issues[0]?.path).toEqual(['answerable']);
    const badId = synthRecordSchema.safeParse({ ...record, id: '3hop1__10001_10002' });
    expect(badId.error?.issues.map((i) => i.message)).toContain('id says 3 hops, question_decomposition has 2');
    const badSupport = synthRecordSchema.safeParse({
      ...record,
      paragraphs: record.paragraphs.map((p) => ({ ...p, is_supporting: p.idx === 2 })),
    });
    expect(badSupport.error?.issues.map((i) => i.message)).toContain(
      'is_supporting flags differ from the paragraph_support_idx values',
    );
  });

  const sample = fileURLToPath(new URL('../../../../shared/data/musique/musique_ans_train_100.jsonl', import.meta.url));
  it.skipIf(!existsSync(sample))(
    'accepts every real MuSiQue-Ans record (the strict schema is the official format)',
    () => {
      const lines = readFileSync(sample, 'utf8').trim().split('\n');
      expect(lines.length).toBe(100);
      for (const [i, line] of lines.entries()) {
        const r = strictMusiqueRecordSchema.safeParse(JSON.parse(line));
        if (!r.success)
          throw new Error(`line ${i + 1}: ${r.error.issues[0]?.path.join('.')}: ${r.error.issues[0]?.message}`);
      }
    },
  );
});

describe('toEpisode', () => {
  it('maps a record to an Episode: answers = answer + aliases, paragraphs, decomposition, meta', () => {
    const ep = toEpisode(record);
    expect(ep.id).toBe('2hop__10001_10002');
    expect(ep.answers).toEqual(['Vlenia', 'Republic of Vlenia']);
    expect(ep.paragraphs[1]).toEqual({
      idx: 1,
      title: 'Zorvex Labs',
      text: 'Zorvex Labs is headquartered in Kozhar.',
      isSupporting: true,
    });
    expect(ep.decomposition?.[1]).toEqual({
      id: 10002,
      question: 'In which country is #1 located?',
      answer: 'Vlenia',
      paragraphSupportIdx: 0,
    });
    expect(ep.answerable).toBe(true);
    expect(ep.meta).toMatchObject({ hops: 2, arithmetic: false });
  });

  it('flags arithmetic questions', () => {
    const arith: StrictMusiqueRecord = {
      ...record,
      id: '2hop__10003_900000',
      question_decomposition: [
        { id: 10003, question: 'In what year was Dara Velk born?', answer: '1950', paragraph_support_idx: 0 },
        { id: 900000, question: 'What year is 60 years after #1?', answer: '2010', paragraph_support_idx: null },
      ],
    };
    expect(toEpisode(arith).meta?.arithmetic).toBe(true);
  });
});
