import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, TINY, writeCorpus } from '../../../test/retrieval/corpora.ts';
import { Bm25Index, readManifest } from './bm25-index.ts';
import { buildIndex } from './build-index.ts';

const BIN = resolve(import.meta.dirname, '../../../bin/sharp.js');

describe('buildIndex', () => {
  it('writes the manifest: passages, tokenizer, k1/b, corpus checksum', async () => {
    const dir = tempDir();
    const corpus = writeCorpus(dir, TINY);
    const m = await buildIndex({ corpus, out: join(dir, 'idx') });
    expect(m).toMatchObject({
      passages: 6,
      tokenizer: 'porter unicode61 remove_diacritics 2',
      bm25: { k1: 1.2, b: 0.75 },
      corpus: { kind: 'passages', records: 6 },
    });
    // sha256 of the corpus bytes (sha256sum of the file).
    expect(m.corpus.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readManifest(join(dir, 'idx'))).toEqual(m);
    expect(readdirSync(dir).sort()).toEqual(['corpus.jsonl', 'idx']);
  });

  it('pools benchmark paragraphs: each (title, text) once, numbered in first-seen order', async () => {
    const dir = tempDir();
    const file = join(dir, 'musique.jsonl');
    const rec = (ps: [string, string][]): string =>
      JSON.stringify({
        id: 'q',
        question: 'q?',
        paragraphs: ps.map(([title, t], idx) => ({ idx, title, paragraph_text: t })),
      });
    writeFileSync(
      file,
      `${rec([
        ['A', 'alpha text'],
        ['B', 'beta text'],
      ])}\n${rec([
        ['B', 'beta  text'],
        ['C', 'gamma text'],
      ])}\n`,
    );
    const m = await buildIndex({ corpus: file, out: join(dir, 'idx') });
    expect(m.passages).toBe(3);
    const ix = new Bm25Index(join(dir, 'idx'));
    expect(ix.searchOne('gamma', 1)[0]).toMatchObject({ id: '2', title: 'C' });
    expect(ix.searchOne('beta', 1)[0]).toMatchObject({ id: '1', title: 'B', text: 'beta text' });
    ix.close();
  });

  it('refuses an --out that is not an index, fills an empty folder and replaces its own index', async () => {
    const dir = tempDir();
    const corpus = writeCorpus(dir, TINY);
    mkdirSync(join(dir, 'taken'));
    writeFileSync(join(dir, 'taken', 'notes.txt'), 'mine');
    await expect(buildIndex({ corpus, out: join(dir, 'taken') })).rejects.toThrow(
      /is a folder not written by sharp index build; choose a new or empty folder/,
    );
    expect(readdirSync(join(dir, 'taken'))).toEqual(['notes.txt']);
    mkdirSync(join(dir, 'empty'));
    await buildIndex({ corpus, out: join(dir, 'empty') });
    expect(readManifest(join(dir, 'empty'))?.passages).toBe(6);
    writeFileSync(join(dir, 'empty', 'notes.txt'), 'mine');
    const smaller = writeCorpus(dir, TINY.slice(0, 2), 'small.jsonl');
    await buildIndex({ corpus: smaller, out: join(dir, 'empty') });
    expect(readManifest(join(dir, 'empty'))?.passages).toBe(2);
    // A rebuild replaces the index's own files only: a file a user put there stays.
    expect(readFileSync(join(dir, 'empty', 'notes.txt'), 'utf8')).toBe('mine');
    expect(readdirSync(dir).filter((e) => e.startsWith('.'))).toEqual([]);
  });

  it('leaves nothing when a line is bad, and names the file and line', async () => {
    const dir = tempDir();
    const corpus = join(dir, 'c.jsonl');
    writeFileSync(corpus, '{"id":"a","contents":"\\"A\\"\\nx"}\n{"id":"b","contents":3}\n');
    await expect(buildIndex({ corpus, out: join(dir, 'idx') })).rejects.toThrow(
      `${corpus}:2: contents: expected a string`,
    );
    expect(readdirSync(dir)).toEqual(['c.jsonl']);
  });

  it('a build killed midway leaves no index that looks whole; a rerun clears its leftovers and builds', async () => {
    const dir = tempDir();
    // ~8 MiB: the CLI prints a progress line per tenth read, so the kill lands with most of it unread.
    const passages = Array.from(
      { length: 120_000 },
      (_, i) =>
        [`Title ${i}`, `passage ${i} about topic${i % 977} and thing${i % 89} in year ${1800 + (i % 200)}`] as const,
    );
    const corpus = writeCorpus(dir, passages);
    const out = join(dir, 'idx');
    const child = spawn(process.execPath, [BIN, 'index', 'build', '--corpus', corpus, '--out', out], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((res, rej) => {
      child.stderr.on('data', (d: Buffer) => {
        if (d.toString().includes('MiB')) res();
      });
      child.on('close', (code) => rej(new Error(`build ended (${code}) before it could be killed`)));
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((e) => e.startsWith('.idx.building-'))).toHaveLength(1);
    expect(() => new Bm25Index(out)).toThrow(/not found/);
    const m = await buildIndex({ corpus, out });
    expect(m.passages).toBe(120_000);
    expect(readdirSync(dir).sort()).toEqual(['corpus.jsonl', 'idx']);
    const ix = new Bm25Index(out);
    expect(ix.searchOne('topic5 thing5 5', 1)[0]?.id).toBe('p5');
    ix.close();
  }, 120_000);

  it('reads a corpus that starts with a UTF-8 byte order mark, as eval reads one', async () => {
    const dir = tempDir();
    const plain = writeCorpus(dir, TINY);
    const bom = join(dir, 'bom.jsonl');
    writeFileSync(bom, `\uFEFF${readFileSync(plain, 'utf8')}`);
    expect((await buildIndex({ corpus: bom, out: join(dir, 'idx') })).passages).toBe(6);
    const array = join(dir, 'bom.json');
    writeFileSync(array, `\uFEFF${JSON.stringify([{ paragraphs: [{ title: 'A', paragraph_text: 'x' }] }])}`);
    expect((await buildIndex({ corpus: array, out: join(dir, 'idx2') })).passages).toBe(1);
    // Only at the start: elsewhere it is a bad line (the CLI shows it as U+FEFF).
    const inner = join(dir, 'inner.jsonl');
    writeFileSync(inner, `${readFileSync(plain, 'utf8')}\uFEFF{}\n`);
    await expect(buildIndex({ corpus: inner, out: join(dir, 'idx3') })).rejects.toThrow(
      /inner\.jsonl:7: not valid JSON/,
    );
  });

  it('names a --corpus that is not a regular file as such, and a missing one as missing', async () => {
    const dir = tempDir();
    symlinkSync('/dev/null', join(dir, 'to-device'));
    for (const corpus of [dir, '/dev/null', join(dir, 'to-device')])
      await expect(buildIndex({ corpus, out: join(dir, 'idx') })).rejects.toThrow(
        `--corpus ${corpus}: not a regular file (a folder, device, pipe or socket); not read`,
      );
    await expect(buildIndex({ corpus: join(dir, 'none.jsonl'), out: join(dir, 'idx') })).rejects.toThrow(
      `--corpus ${join(dir, 'none.jsonl')}: file not found`,
    );
    expect(readdirSync(dir)).toEqual(['to-device']);
  });

  it('refuses an --out that is a link, and an index whose database or manifest is not as it wrote them', async () => {
    const dir = tempDir();
    const corpus = writeCorpus(dir, TINY);
    mkdirSync(join(dir, 'empty'));
    symlinkSync(join(dir, 'empty'), join(dir, 'link'));
    await expect(buildIndex({ corpus, out: join(dir, 'link') })).rejects.toThrow(
      `--out ${join(dir, 'link')}: is a link; it is not followed or replaced (choose another path)`,
    );
    expect(readdirSync(join(dir, 'empty'))).toEqual([]);
    const out = join(dir, 'idx');
    await buildIndex({ corpus, out });
    // Our own earlier index: rebuilt.
    await buildIndex({ corpus, out });
    const db = join(out, 'passages.sqlite');
    writeFileSync(db, 'my own notes, not an index');
    await expect(buildIndex({ corpus, out })).rejects.toThrow(
      `--out ${db}: exists and was changed since sharp wrote it; choose another path`,
    );
    expect(readFileSync(db, 'utf8')).toBe('my own notes, not an index');
    const other = join(dir, 'idx-b');
    await buildIndex({ corpus, out: other });
    writeFileSync(join(other, 'index.json'), `${readFileSync(join(other, 'index.json'), 'utf8')}\n`);
    await expect(buildIndex({ corpus, out: other })).rejects.toThrow(/index\.json: exists and was changed since sharp/);
  });
});
