import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UserError } from '../../errors.ts';
import { generateSynth } from '../synth/generate.ts';
import { musiqueToEpisode } from './musique.ts';
import { readUserJsonl } from './user-jsonl.ts';

const repo = resolve(import.meta.dirname, '../../..');
const dir = mkdtempSync(join(tmpdir(), 'sharp-user-jsonl-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** A file of these lines; returns its path. */
function fileOf(lines: readonly string[]): string {
  const f = join(dir, `f${files++}.jsonl`);
  writeFileSync(f, lines.join('\n'));
  return f;
}

/** The error reading `lines` gives, checked to be a UserError (exit 2); its message. */
function errorOf(lines: readonly string[]): { file: string; message: string } {
  const file = fileOf(lines);
  try {
    readUserJsonl(file);
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).exitCode).toBe(2);
    return { file, message: (err as Error).message };
  }
  throw new Error(`${file} read without an error`);
}

const ok = '{"id":"ok","question":"Q?","answers":["A"]}';

describe('readUserJsonl', () => {
  it('reads both answer forms, paragraphs and decompositions into the exact episodes, skipping blank lines', () => {
    const file = fileOf([
      '{"id":"q1","question":"Where was the founder of Brightwater Looms born?",' +
        '"answers":["Thornwick","Thornwick-on-Lume"],' +
        '"paragraphs":[{"title":"Ilsa Marrow","text":"Ilsa Marrow was born in Thornwick.","is_supporting":true},' +
        '{"title":"Ezra Kindle","text":"Ezra Kindle was born in Quillon."}],' +
        '"decomposition":[{"question":"Who founded Brightwater Looms?","answer":"Ilsa Marrow"},' +
        '{"question":"Where was #1 born?","answer":"Thornwick"}]}',
      '',
      '  {"id":"q2","question":"Capital of Fenmark?","answer":"Lowmere","answer_aliases":["Low Mere"]}  ',
      '{"id":"q3","question":"Who wrote Cold Looms?","answer":"Ilsa Marrow","paragraphs":[]}',
      '',
    ]);
    expect(readUserJsonl(file)).toEqual([
      {
        id: 'q1',
        question: 'Where was the founder of Brightwater Looms born?',
        answers: ['Thornwick', 'Thornwick-on-Lume'],
        paragraphs: [
          { idx: 0, title: 'Ilsa Marrow', text: 'Ilsa Marrow was born in Thornwick.', isSupporting: true },
          { idx: 1, title: 'Ezra Kindle', text: 'Ezra Kindle was born in Quillon.' },
        ],
        decomposition: [
          { id: 1, question: 'Who founded Brightwater Looms?', answer: 'Ilsa Marrow', paragraphSupportIdx: null },
          { id: 2, question: 'Where was #1 born?', answer: 'Thornwick', paragraphSupportIdx: null },
        ],
      },
      { id: 'q2', question: 'Capital of Fenmark?', answers: ['Lowmere', 'Low Mere'], paragraphs: [] },
      { id: 'q3', question: 'Who wrote Cold Looms?', answers: ['Ilsa Marrow'], paragraphs: [] },
    ]);
    // `max`: the first records only.
    expect(readUserJsonl(file, 2).map((e) => e.id)).toEqual(['q1', 'q2']);
  });

  it('the shipped sample holds the synthetic world of `sharp data synth --seed 1 --n 10 --max-hops 3`', () => {
    const synth = generateSynth({ seed: 1, n: 10, minHops: 2, maxHops: 3 }).map(musiqueToEpisode);
    expect(readUserJsonl(join(repo, 'data/jsonl/questions_sample.jsonl'))).toEqual(
      synth.map((e) => ({
        id: e.id,
        question: e.question,
        answers: e.answers,
        paragraphs: e.paragraphs,
        decomposition: e.decomposition?.map((d, i) => ({ ...d, id: i + 1, paragraphSupportIdx: null })),
      })),
    );
  });

  it("docs/extending.md's example reads into the episodes it describes", () => {
    const doc = readFileSync(join(repo, 'docs/extending.md'), 'utf8');
    const lines = doc.split('\n').filter((l) => l.startsWith('{"id": '));
    expect(lines).toHaveLength(2);
    const [q1, q2] = readUserJsonl(fileOf(lines));
    expect([q1?.answers, q1?.paragraphs.filter((p) => p.isSupporting).map((p) => p.idx)]).toEqual([['1957'], [0, 1]]);
    expect(q1?.decomposition?.map((d) => [d.id, d.answer])).toEqual([
      [1, 'Zhukath Vlalom'],
      [2, '1957'],
    ]);
    expect(q2).toEqual({
      id: 'q2',
      question: 'Who founded the company that employed Zhekre Travlend?',
      answers: ['Daikux Zhusto', 'Zhusto'],
      paragraphs: [],
    });
  });

  it('a line that is not JSON names the file and line', () => {
    const bad = '{"id":"x","question":"Q?" "answers":["A"]}';
    let reason = '';
    try {
      JSON.parse(bad);
    } catch (err) {
      reason = (err as Error).message;
    }
    const { file, message } = errorOf([ok, '', bad]);
    expect(message).toBe(`${file}:3: not valid JSON (${reason})`);
  });

  const cases: Array<[string, string, string]> = [
    ['not an object', '["Q?","A"]', 'expected a JSON object {id, question, answers, ...}'],
    ['no id', '{"question":"Q?","answers":["A"]}', 'id: expected a non-empty string'],
    ['a number as id', '{"id":7,"question":"Q?","answers":["A"]}', 'id: expected a non-empty string'],
    ['an empty question', '{"id":"x","question":"","answers":["A"]}', 'question: expected a non-empty string'],
    ['answers not a list', '{"id":"x","question":"Q?","answers":"A"}', 'answers: expected a list of strings'],
    ['an empty alias', '{"id":"x","question":"Q?","answers":["A",""]}', 'answers[1]: expected a non-empty string'],
    ['no answers at all', '{"id":"x","question":"Q?","answers":[]}', 'answers: expected at least one answer'],
    [
      'no answer key',
      '{"id":"x","question":"Q?"}',
      'no gold answer: give answers (a list) or answer (+ answer_aliases)',
    ],
    [
      'both answer forms',
      '{"id":"x","question":"Q?","answers":["A"],"answer":"A"}',
      'give either answers or answer (+ answer_aliases), not both',
    ],
    ['aliases without answer', '{"id":"x","question":"Q?","answer_aliases":["A"]}', 'answer_aliases: needs answer'],
    [
      'an unknown key',
      '{"id":"x","question":"Q?","answers":["A"],"answer_alias":["B"]}',
      "unknown key 'answer_alias' (a record holds id, question, answers, answer, answer_aliases, paragraphs, " +
        'decomposition)',
    ],
    [
      'paragraphs not a list',
      '{"id":"x","question":"Q?","answers":["A"],"paragraphs":{"title":"T","text":"t"}}',
      'paragraphs: expected a list of {title, text, is_supporting?}',
    ],
    [
      'a paragraph without text',
      '{"id":"x","question":"Q?","answers":["A"],"paragraphs":[{"title":"T","text":"t"},{"title":"U"}]}',
      'paragraphs[1].text: expected a string',
    ],
    [
      'is_supporting not a boolean',
      '{"id":"x","question":"Q?","answers":["A"],"paragraphs":[{"title":"T","text":"t","is_supporting":"yes"}]}',
      'paragraphs[0].is_supporting: expected true or false',
    ],
    [
      'a paragraph with an unknown key',
      '{"id":"x","question":"Q?","answers":["A"],"paragraphs":[{"title":"T","paragraph_text":"t"}]}',
      'paragraphs[0].text: expected a string',
    ],
    [
      'a hop without an answer',
      '{"id":"x","question":"Q?","answers":["A"],"decomposition":[{"question":"Who?"}]}',
      'decomposition[0].answer: expected a non-empty string',
    ],
    [
      'decomposition not a list',
      '{"id":"x","question":"Q?","answers":["A"],"decomposition":"Who?"}',
      'decomposition: expected a list of {question, answer}',
    ],
  ];
  for (const [what, line, reason] of cases) {
    it(`${what}: FILE:LINE: ${reason}`, () => {
      const { file, message } = errorOf([ok, line]);
      expect(message).toBe(`${file}:2: ${reason}`);
    });
  }

  it('an id given twice names both lines', () => {
    const { file, message } = errorOf([ok, '{"id":"y","question":"Q?","answers":["A"]}', '', ok]);
    expect(message).toBe(`${file}:4: id 'ok' is already on line 1`);
  });

  it('a missing file is one line', () => {
    const file = join(dir, 'missing.jsonl');
    expect(() => readUserJsonl(file)).toThrow(new UserError(`${file}: file not found`));
  });
});
