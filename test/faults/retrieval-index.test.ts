import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIndex } from '../../src/tools/retrieval/build-index.ts';
import { tempDir, TINY, writeCorpus } from '../retrieval/corpora.ts';
import { sharpTimed } from '../retrieval/cli-timed.ts';

/**
 * `sharp index build`, `index info` and `serve retrieval` (the real program) on index folders and
 * corpora that misbehave: a named pipe where a file is read (it would block open(2) forever), a
 * device, a folder, a damaged or hand-edited manifest, a byte order mark, an --out that is a link or
 * holds a database the user replaced. Each is refused in one line with exit 2, at once, before
 * anything is written; none hangs (each command is killed after 30 s).
 */
let root: string;
let good: string;
let corpus: string;

beforeAll(async () => {
  root = tempDir('sharp-index-faults-');
  corpus = writeCorpus(root, TINY);
  good = join(root, 'good');
  await buildIndex({ corpus, out: good });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of the good index with `file` replaced by what `make` puts there. */
function variant(name: string, file: string, make: (path: string) => void): string {
  const dir = join(root, name);
  cpSync(good, dir, { recursive: true });
  rmSync(join(dir, file));
  make(join(dir, file));
  return dir;
}
const fifo = (path: string): void => void execFileSync('mkfifo', [path]);

async function refused(args: string[], line: RegExp): Promise<void> {
  const r = await sharpTimed(args, root, 30_000);
  expect(r.timedOut, `${args.join(' ')} hung`).toBe(false);
  expect([r.code, r.stdout], r.stderr).toEqual([2, '']);
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(line);
  expect(r.stderr).not.toMatch(/TypeError|internal error|\n {4}at /);
}

describe('a named pipe in an index folder', () => {
  it('as index.json or passages.sqlite: info, serve and build --out each refuse it at once', async () => {
    const manifestPipe = variant('pipe-manifest', 'index.json', fifo);
    const dbPipe = variant('pipe-db', 'passages.sqlite', fifo);
    const dbLink = variant('link-db', 'passages.sqlite', (p) => symlinkSync(join(dbPipe, 'passages.sqlite'), p));
    const notRegular = /not a regular file \(a folder, device, pipe or socket\)/;
    await refused(['index', 'info', manifestPipe], /^sharp: index .*pipe-manifest: index\.json: not a regular file/);
    await refused(['index', 'info', dbPipe], /^sharp: index .*pipe-db: passages\.sqlite: not a regular file/);
    await refused(['index', 'info', dbLink], notRegular);
    await refused(['serve', 'retrieval', '--index', dbPipe, '--port', '0'], notRegular);
    await refused(['serve', 'retrieval', '--index', manifestPipe, '--port', '0'], notRegular);
    // A rebuild reads the earlier manifest and claims the database: the pipe is refused, never opened.
    await refused(
      ['index', 'build', '--corpus', corpus, '--out', manifestPipe],
      /^sharp: --out .*index\.json: exists and is not a regular file \(a link, device or pipe\); it is not replaced$/,
    );
    await refused(['index', 'build', '--corpus', corpus, '--out', dbPipe], /passages\.sqlite: exists and is not a/);
  }, 180_000);
});

describe('the manifest', () => {
  it('missing a field or edited by hand is one line, exit 2, not a stack trace or a negative count', async () => {
    const m = JSON.parse(readFileSync(join(good, 'index.json'), 'utf8')) as Record<string, unknown>;
    const { bm25: _bm25, ...noBm25 } = m;
    const write = (v: unknown) => (p: string) => writeFileSync(p, JSON.stringify(v));
    await refused(
      ['index', 'info', variant('no-bm25', 'index.json', write(noBm25))],
      /^sharp: index .*no-bm25: index\.json: bm25: .*expected object.*\(rebuild the index\)$/,
    );
    await refused(
      ['index', 'info', variant('negative', 'index.json', write({ ...m, passages: -5 }))],
      /^sharp: index .*negative: index\.json: passages: .*>=0 \(rebuild the index\)$/,
    );
    const ok = await sharpTimed(['index', 'info', good], root, 30_000);
    expect([ok.code, ok.stdout]).toEqual([0, expect.stringContaining('passages   6\n')]);
  }, 120_000);
});

describe('the corpus', () => {
  it('a leading byte order mark is read; one elsewhere is named as U+FEFF', async () => {
    const bom = join(root, 'bom.jsonl');
    writeFileSync(bom, `\uFEFF${readFileSync(corpus, 'utf8')}`);
    const r = await sharpTimed(['index', 'build', '--corpus', bom, '--out', join(root, 'bom-idx')], root, 60_000);
    expect([r.code, r.stderr]).toEqual([0, expect.any(String)]);
    expect(r.stdout).toMatch(/: 6 passages from 6 records/);
    const inner = join(root, 'inner.jsonl');
    writeFileSync(inner, `${readFileSync(corpus, 'utf8')}\uFEFF{"id": "x"}\n`);
    await refused(
      ['index', 'build', '--corpus', inner, '--out', join(root, 'inner-idx')],
      /^sharp: .*inner\.jsonl:7: not valid JSON \(Unexpected token 'U\+FEFF', "U\+FEFF\{"id": "x"\}" is not valid JSON\)$/,
    );
  }, 120_000);

  it('a folder, a device, a pipe or a link to a pipe is named as what it is, not "file not found"', async () => {
    const pipe = join(root, 'corpus-pipe');
    fifo(pipe);
    symlinkSync(pipe, join(root, 'corpus-link'));
    mkdirSync(join(root, 'corpus-dir'));
    for (const c of [join(root, 'corpus-dir'), '/dev/null', pipe, join(root, 'corpus-link')])
      await refused(
        ['index', 'build', '--corpus', c, '--out', join(root, 'never')],
        new RegExp(`^sharp: --corpus ${c}: not a regular file \\(a folder, device, pipe or socket\\); not read$`),
      );
    await refused(['index', 'build', '--corpus', join(root, 'none'), '--out', join(root, 'never')], /file not found$/);
  }, 180_000);
});

describe('--out', () => {
  it('a link to an empty folder, or an index whose database the user replaced, is refused', async () => {
    mkdirSync(join(root, 'empty'));
    symlinkSync(join(root, 'empty'), join(root, 'out-link'));
    await refused(
      ['index', 'build', '--corpus', corpus, '--out', join(root, 'out-link')],
      /^sharp: --out .*out-link: is a link; it is not followed or replaced \(choose another path\)$/,
    );
    const mine = join(root, 'mine');
    cpSync(good, mine, { recursive: true });
    writeFileSync(join(mine, 'passages.sqlite'), 'the user wrote this by hand');
    await refused(
      ['index', 'build', '--corpus', corpus, '--out', mine],
      /^sharp: --out .*mine\/passages\.sqlite: exists and was changed since sharp wrote it; choose another path$/,
    );
    expect(readFileSync(join(mine, 'passages.sqlite'), 'utf8')).toBe('the user wrote this by hand');
  }, 120_000);
});
