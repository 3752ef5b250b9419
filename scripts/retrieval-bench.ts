/**
 * The measurements of docs/retrieval.md:
 * 1. `sharp index build` time and size on a generated corpus of >= 100k passages (the paragraphs of
 *    synthetic worlds, one world per record: no real corpus ships with the repository; `--join k`
 *    makes each passage k paragraphs of one record, ~100 words at k = 4 like a wiki-18 passage);
 * 2. query latency p50 / p99 at topk 5, in-process (Bm25Index) and through the server of `sharp
 *    serve retrieval` (createRetrievalServer in a child process: this script with --serve; one query
 *    per request, as a rollout's search sends it);
 * 3. recall@5 of the supporting paragraphs over a pooled benchmark file, FTS5 index beside the
 *    in-memory minisearch backend (tools/search.ts) on the same queries: each question, and for
 *    MuSiQue each gold sub-question (its #k references filled with the gold answers) against its one
 *    supporting paragraph.
 * Latency and recall are also taken with `--max-term-share` (default 0.05) for the index: query
 * words in more than that share of the passages left out (rollout.search.maxTermShare).
 *
 * npx tsx scripts/retrieval-bench.ts [--passages 100000] [--join 1] [--queries 1000] [--musique FILE] [--hotpot FILE]
 * Files given that do not exist are skipped with a line saying so.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Episode } from '../src/data/episode.ts';
import { readHotpot } from '../src/data/readers/hotpot.ts';
import { readMusique } from '../src/data/readers/musique.ts';
import { generateSynth } from '../src/data/synth/generate.ts';
import { substituteRefs } from '../src/data/synth/reader.ts';
import { writeJsonlAtomic } from '../src/fs/atomic.ts';
import { Bm25Index, DB_FILE } from '../src/tools/retrieval/bm25-index.ts';
import { buildIndex } from '../src/tools/retrieval/build-index.ts';
import { passageKey, toContents } from '../src/tools/retrieval/contents.ts';
import { RemoteRetriever } from '../src/tools/retrieval/remote.ts';
import { createRetrievalServer } from '../src/tools/retrieval/server.ts';
import type { AddressInfo } from 'node:net';
import { createSearch, poolParagraphs } from '../src/tools/search.ts';

const { values: args } = parseArgs({
  options: {
    passages: { type: 'string', default: '100000' },
    join: { type: 'string', default: '1' },
    queries: { type: 'string', default: '1000' },
    musique: { type: 'string', default: '../shared/data/musique/musique_ans_train_100.jsonl' },
    hotpot: { type: 'string', default: '../shared/data/hotpotqa/hotpot_dev_distractor_500.jsonl' },
    serve: { type: 'string' },
    'max-term-share': { type: 'string', default: '0.05' },
  },
});
if (args.serve) {
  const server = createRetrievalServer(new Bm25Index(args.serve));
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(`at http://127.0.0.1:${(server.address() as AddressInfo).port}/retrieve\n`),
  );
  process.once('SIGTERM', () => process.exit(0));
  await new Promise(() => {});
}
const work = mkdtempSync(join(tmpdir(), 'sharp-retrieval-bench-'));

const pct = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
};
const ms = (x: number): string => x.toFixed(2);
const share = Number(args['max-term-share']);

/**
 * A generated corpus of `n` passages, written in pieces of 500 records (never all in memory), and sub-questions to
 * query it with.
 */
function generatedCorpus(n: number, per: number, nQueries: number): { file: string; queries: string[]; chars: number } {
  const file = join(work, 'generated.jsonl');
  const rows: { id: string; contents: string }[] = [];
  const queries: string[] = [];
  let chars = 0;
  for (let piece = 0; rows.length < n; piece++) {
    for (const r of generateSynth({ seed: 1000 + piece, n: 500, worlds: 'fresh' })) {
      for (let i = 0; i + per <= r.paragraphs.length && rows.length < n; i += per) {
        const ps = r.paragraphs.slice(i, i + per);
        const text = ps.map((p) => p.paragraph_text).join(' ');
        rows.push({ id: String(rows.length), contents: toContents({ title: ps[0]?.title ?? '', text }) });
        chars += text.length;
      }
      if (queries.length < nQueries) {
        const answers: string[] = [];
        for (const d of r.question_decomposition ?? []) {
          queries.push(substituteRefs(d.question, answers));
          answers.push(d.answer);
        }
      }
    }
  }
  writeJsonlAtomic(file, rows);
  return { file, queries: queries.slice(0, nQueries), chars: chars / rows.length };
}

async function serveIndex(dir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1] as string, '--serve', dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((res, rej) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /at (http:\/\/\S+\/retrieve)/.exec(out);
      if (m) res(m[1] as string);
    });
    child.on('close', (code) => rej(new Error(`serve exited ${code}`)));
  });
  return { url, stop: () => new Promise((r) => (child.on('close', () => r()), child.kill('SIGTERM'))) };
}

/** Per-query milliseconds of `queries` against the index opened in-process. */
function inProcess(indexDir: string, queries: string[], maxTermShare: number): number[] {
  const index = new Bm25Index(indexDir, { maxTermShare });
  for (const q of queries.slice(0, 50)) index.searchOne(q, 5); // page cache warm, as a running server's is
  const out: number[] = [];
  for (const q of queries) {
    const t0 = performance.now();
    index.searchOne(q, 5);
    out.push(performance.now() - t0);
  }
  index.close();
  return out;
}

async function latency(indexDir: string, queries: string[]): Promise<void> {
  const local = inProcess(indexDir, queries, 1);
  const pruned = inProcess(indexDir, queries, share);
  const server = await serveIndex(indexDir);
  const remote = new RemoteRetriever({ url: server.url, timeoutMs: 10_000, retries: 0 });
  for (const q of queries.slice(0, 50)) await remote.search([q], 5);
  const http: number[] = [];
  for (const q of queries) {
    const t0 = performance.now();
    await remote.search([q], 5);
    http.push(performance.now() - t0);
  }
  await server.stop();
  console.log(`| in-process (Bm25Index) | ${queries.length} | ${ms(pct(local, 0.5))} | ${ms(pct(local, 0.99))} |`);
  console.log(
    `| in-process, maxTermShare ${share} | ${queries.length} | ${ms(pct(pruned, 0.5))} | ${ms(pct(pruned, 0.99))} |`,
  );
  console.log(
    `| sharp serve retrieval (HTTP, loopback) | ${queries.length} | ${ms(pct(http, 0.5))} | ${ms(pct(http, 0.99))} |`,
  );
}

interface Query {
  text: string;
  /** passageKey of each supporting paragraph. */
  gold: string[];
}

function recallOf(found: (q: string) => Promise<string[]>, queries: Query[]): Promise<number> {
  return queries
    .reduce(async (acc, q) => {
      const keys = new Set(await found(q.text));
      return (await acc) + q.gold.filter((g) => keys.has(g)).length / q.gold.length;
    }, Promise.resolve(0))
    .then((s) => s / queries.length);
}

async function recall(name: string, file: string, episodes: Episode[]): Promise<void> {
  const questions: Query[] = episodes
    .map((e) => ({ text: e.question, gold: e.paragraphs.filter((p) => p.isSupporting).map(passageKey) }))
    .filter((q) => q.gold.length > 0);
  const hops: Query[] = [];
  for (const e of episodes) {
    const answers: string[] = [];
    for (const d of e.decomposition ?? []) {
      const p = e.paragraphs.find((x) => x.idx === d.paragraphSupportIdx);
      if (p) hops.push({ text: substituteRefs(d.question, answers), gold: [passageKey(p)] });
      answers.push(d.answer);
    }
  }
  const dir = join(work, `${name}-index`);
  const m = await buildIndex({ corpus: file, out: dir });
  const index = new Bm25Index(dir);
  const pruned = new Bm25Index(dir, { maxTermShare: share });
  const pooled = poolParagraphs(episodes);
  const mini = createSearch(pooled.paragraphs, { topK: 5, maxChars: 100_000 });
  const viaIndex = (q: string): Promise<string[]> => Promise.resolve(index.searchOne(q, 5).map(passageKey));
  const viaPruned = (q: string): Promise<string[]> => Promise.resolve(pruned.searchOne(q, 5).map(passageKey));
  const viaMini = async (q: string): Promise<string[]> =>
    ((await mini(q)).retrievedIdx ?? []).map((i) => passageKey(pooled.paragraphs[i] as Episode['paragraphs'][number]));
  const row = async (what: string, qs: Query[]): Promise<void> => {
    if (qs.length === 0) return;
    console.log(
      `| ${name} | ${m.passages} | ${what} | ${qs.length} | ${(await recallOf(viaIndex, qs)).toFixed(3)} | ` +
        `${(await recallOf(viaPruned, qs)).toFixed(3)} | ${(await recallOf(viaMini, qs)).toFixed(3)} |`,
    );
  };
  await row('question', questions);
  await row('gold sub-question', hops);
  index.close();
  pruned.close();
}

try {
  const n = Number(args.passages);
  const t0 = performance.now();
  const gen = generatedCorpus(n, Number(args.join), Number(args.queries));
  console.log(
    `generated ${n} passages (mean ${gen.chars.toFixed(0)} characters of text) in ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  const dir = join(work, 'generated-index');
  const t1 = performance.now();
  const m = await buildIndex({ corpus: gen.file, out: dir });
  const seconds = (performance.now() - t1) / 1000;
  console.log('\n| passages | corpus MiB | build s | passages/s | index MiB |\n| --- | --- | --- | --- | --- |');
  console.log(
    `| ${m.passages} | ${(statSync(gen.file).size / 2 ** 20).toFixed(1)} | ${seconds.toFixed(1)} | ` +
      `${Math.round(m.passages / seconds)} | ${(statSync(join(dir, DB_FILE)).size / 2 ** 20).toFixed(1)} |`,
  );
  console.log('\n| path | queries | p50 ms | p99 ms |\n| --- | --- | --- | --- |');
  await latency(dir, gen.queries);
  console.log(
    `\n| pool | passages | queries | n | recall@5 FTS5 index | recall@5 FTS5, maxTermShare ${share} | recall@5 ` +
      `minisearch (episode backend) |\n| --- | --- | --- | --- | --- | --- | --- |`,
  );
  const musique = resolve(args.musique);
  if (existsSync(musique)) await recall('MuSiQue', musique, readMusique(musique));
  else console.log(`(skipped: ${musique} not found)`);
  const hotpot = resolve(args.hotpot);
  if (existsSync(hotpot)) await recall('HotpotQA', hotpot, readHotpot(hotpot));
  else console.log(`(skipped: ${hotpot} not found)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
