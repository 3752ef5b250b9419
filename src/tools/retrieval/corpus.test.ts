import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/retrieval/corpora.ts';
import { fromContents, toContents } from './contents.ts';
import { readCorpus, recordPassages } from './corpus.ts';

describe('contents', () => {
  it('reads and writes Search-R1\'s "Title"\\ntext', () => {
    expect(fromContents('"Ilsa Marrow"\nIlsa Marrow (born 1902) was a weaver.\nMore.')).toEqual({
      title: 'Ilsa Marrow',
      text: 'Ilsa Marrow (born 1902) was a weaver.\nMore.',
    });
    expect(fromContents('Bare title\ntext')).toEqual({ title: 'Bare title', text: 'text' });
    expect(fromContents('no title at all')).toEqual({ title: '', text: 'no title at all' });
    expect(fromContents(toContents({ title: 'A "quoted" b', text: 'x' }))).toEqual({
      title: 'A "quoted" b',
      text: 'x',
    });
  });
});

describe('readCorpus', () => {
  it('reads Search-R1 passages, MuSiQue paragraphs and HotpotQA context', () => {
    expect(recordPassages({ id: 7, contents: '"T"\nx' })).toEqual({
      kind: 'passages',
      passages: [{ id: '7', title: 'T', text: 'x' }],
    });
    expect(recordPassages({ paragraphs: [{ idx: 0, title: 'T', paragraph_text: 'x' }] })).toEqual({
      kind: 'paragraphs',
      passages: [{ title: 'T', text: 'x' }],
    });
    expect(recordPassages({ context: [['T', [' One.', ' Two.']]] })).toEqual({
      kind: 'paragraphs',
      passages: [{ title: 'T', text: 'One. Two.' }],
    });
    expect(recordPassages({ id: 'x' })).toMatch(/expected \{id, contents\}/);
    expect(recordPassages({ contents: 'x' })).toBe('id: expected a string or a number');
  });

  it('streams a JSONL file and a JSON array, with line numbers and bytes read', () => {
    const dir = tempDir();
    const jsonl = join(dir, 'c.jsonl');
    writeFileSync(jsonl, '{"id":"a","contents":"\\"A\\"\\nx"}\n\n{"id":"b","contents":"\\"B\\"\\ny"}\n');
    let bytes = 0;
    const recs = [...readCorpus(jsonl, { onBytes: (b) => (bytes = b) })];
    expect(recs.map((r) => [r.line, r.passages[0]?.id])).toEqual([
      [1, 'a'],
      [3, 'b'],
    ]);
    expect(bytes).toBe(statSync(jsonl).size);
    const array = join(dir, 'h.json');
    writeFileSync(array, '[\n{"_id":"q","context":[["T",["s"]]]},\n{"_id":"r","context":[["U",["t"]]]}\n]');
    expect([...readCorpus(array)].map((r) => [r.line, r.kind, r.passages[0]?.title])).toEqual([
      [2, 'paragraphs', 'T'],
      [3, 'paragraphs', 'U'],
    ]);
  });

  it('stops at a bad line with one line naming file and line', () => {
    const dir = tempDir();
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"id":"a","contents":"x"}\n{"id":"b",\n');
    expect(() => [...readCorpus(bad)]).toThrow(new RegExp(`^${bad}:2: not valid JSON`));
    const mixed = join(dir, 'mixed.jsonl');
    writeFileSync(mixed, '{"id":"a","contents":"x"}\n{"paragraphs":[]}\n');
    expect(() => [...readCorpus(mixed)]).toThrow(
      `${mixed}:2: a benchmark record in a file whose first record was a Search-R1 passage (one kind per corpus)`,
    );
    const shape = join(dir, 'shape.jsonl');
    writeFileSync(shape, '[1]\n');
    expect(() => [...readCorpus(shape)]).toThrow(`${shape}:1: expected a JSON object`);
  });
});
