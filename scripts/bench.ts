import { mkdir, rename, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend, type BackendName } from '../src/backend/select.ts';
import type { BenchRow, BenchSection } from './bench/types.ts';

/**
 * `npm run bench`: prints backend, threads and a table, writes bench/results.json
 * atomically. Sections live in scripts/bench/<name>.ts; add one by appending to SECTIONS.
 * Flags: --backend auto|wasm|cpu|tensorflow (default wasm), --quick, --only
 * model,profile,ops,rollout,native,prefix,optimizer,distributed,credit,tools. The profile section prints tf.profile's
 * per-op table of one train step (kernel, calls, ms); the ops section times each custom-gradient op's forward and
 * backward alone at that step's shapes.
 */
// Each section is imported lazily, so one that cannot load (say, a native addon not built) fails alone.
const SECTIONS: BenchSection[] = [
  { name: 'model', run: async (quick) => (await import('./bench/model.ts')).benchModel(quick) },
  { name: 'profile', run: async (quick) => (await import('./bench/profile.ts')).benchProfile(quick) },
  { name: 'ops', run: async (quick) => (await import('./bench/ops.ts')).benchOps(quick) },
  { name: 'rollout', run: async (quick) => (await import('./bench/rollout.ts')).benchRollout(quick) },
  { name: 'native', run: async (quick) => (await import('./bench/native.ts')).benchNative(quick) },
  { name: 'prefix', run: async (quick) => (await import('./bench/prefix.ts')).benchPrefix(quick) },
  { name: 'optimizer', run: async (quick) => (await import('./bench/optimizer.ts')).benchOptimizer(quick) },
  { name: 'distributed', run: async (quick) => (await import('./bench/distributed.ts')).benchDistributed(quick) },
  { name: 'credit', run: async (quick) => (await import('./bench/credit.ts')).benchCredit(quick) },
  { name: 'tools', run: async (quick) => (await import('./bench/tools.ts')).benchTools(quick) },
];

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function table(rows: BenchRow[]): string {
  const cells = rows.map((r) => [
    r.section,
    r.metric,
    r.value >= 100 ? r.value.toFixed(0) : r.value.toFixed(2),
    r.unit,
    r.target ?? '',
  ]);
  const head = ['section', 'metric', 'value', 'unit', 'target'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (c: string[]): string =>
    c.map((x, i) => (i === 2 ? x.padStart(widths[i] as number) : x.padEnd(widths[i] as number))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

async function main(): Promise<void> {
  const backendName = (flag('backend') ?? 'wasm') as BackendName;
  const quick = process.argv.includes('--quick');
  const only = flag('only')?.split(',');
  const choice = await initBackend(backendName);
  const threads = choice.wasm?.threads ?? availableParallelism();
  console.log(
    `backend ${choice.backend} (${choice.pkg}), threads ${threads}, simd ${choice.wasm?.simd ?? 'n/a'}, cpu ` +
      `${cpus()[0]?.model ?? '?'} x ${availableParallelism()}`,
  );
  const rows: BenchRow[] = [];
  const failed: string[] = [];
  for (const s of SECTIONS) {
    if (only && !only.includes(s.name)) continue;
    try {
      rows.push(...(await s.run(quick)));
    } catch (err) {
      failed.push(s.name);
      console.error(
        `bench section '${s.name}' failed: ${String(err instanceof Error ? err.message : err).split('\n')[0]}`,
      );
    }
  }
  console.log(table(rows));
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const file = join(root, 'bench', 'results.json');
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  const out = {
    date: new Date().toISOString(),
    backend: choice.backend,
    threads,
    simd: choice.wasm?.simd ?? null,
    node: process.version,
    quick,
    failed,
    rows,
  };
  await writeFile(tmp, JSON.stringify(out, null, 2) + '\n');
  await rename(tmp, file);
  console.log(`wrote ${file}`);
  if (failed.length > 0) process.exitCode = 1;
}

await main();
