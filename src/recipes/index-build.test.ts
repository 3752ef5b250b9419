import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharp, start } from '../../test/retrieval/cli.ts';
import { tempDir, TINY, writeCorpus } from '../../test/retrieval/corpora.ts';
import { RemoteRetriever } from '../tools/retrieval/remote.ts';

describe('sharp index build / index info / serve retrieval', () => {
  it('builds, describes, serves over the protocol, and stops on SIGTERM', async () => {
    const dir = tempDir();
    const corpus = writeCorpus(dir, TINY);
    const build = await sharp(['index', 'build', '--corpus', corpus, '--out', join(dir, 'idx')]);
    expect(build.code).toBe(0);
    expect(build.stdout).toMatch(/^index .*idx: 6 passages from 6 records \(passages\) in [\d.]+ s, [\d.]+ KiB\n$/);
    const info = await sharp(['index', 'info', join(dir, 'idx')]);
    expect(info.code).toBe(0);
    expect(info.stdout).toContain('passages   6\n');
    expect(info.stdout).toContain('tokenizer  FTS5 porter unicode61 remove_diacritics 2\n');
    expect(info.stdout).toMatch(/bm25 {7}k1 1\.2, b 0\.75 \(SQLite 3\.\d+\.\d+\)\n/);
    expect(info.stdout).toMatch(/sha256 {5}[0-9a-f]{64}\n/);
    const { child, match } = await start(
      ['serve', 'retrieval', '--index', join(dir, 'idx'), '--port', '0'],
      /at (http:\/\/127\.0\.0\.1:\d+\/retrieve)\n/,
    );
    try {
      const remote = new RemoteRetriever({ url: match[1] as string, timeoutMs: 5000, retries: 0 });
      expect((await remote.search(['cat'], 1))[0]).toEqual([
        { id: 'p3', title: 'Delta', text: 'cat cat cat cat fish', score: expect.closeTo(0.873737, 5) },
      ]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await new Promise((r) => child.on('close', r))).toBe(0);
  }, 120_000);

  it('stops with one line and exit 2 on a bad corpus line, a taken --out and a missing index', async () => {
    const dir = tempDir();
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"id":"a","contents":"\\"A\\"\\nx"}\n{"id":"b"}\n');
    const r = await sharp(['index', 'build', '--corpus', bad, '--out', join(dir, 'idx')]);
    expect([r.code, r.stderr]).toEqual([
      2,
      `sharp: ${bad}:2: expected {id, contents} (Search-R1 corpus), a MuSiQue record (paragraphs) or a HotpotQA / ` +
        `2Wiki record (context)\n`,
    ]);
    mkdirSync(join(dir, 'mine'));
    writeFileSync(join(dir, 'mine', 'x'), '');
    const taken = await sharp(['index', 'build', '--corpus', writeCorpus(dir, TINY), '--out', join(dir, 'mine')]);
    expect([taken.code, taken.stderr]).toEqual([
      2,
      `sharp: --out ${join(dir, 'mine')}: is a folder not written by sharp index build; choose a new or empty folder\n`,
    ]);
    const missing = await sharp(['index', 'info', join(dir, 'nothing')]);
    expect([missing.code, missing.stderr]).toEqual([
      2,
      `sharp: index ${join(dir, 'nothing')}: not found (build one with sharp index build)\n`,
    ]);
  }, 120_000);
});
