import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { initBackend, type BackendName } from '../src/backend/select.ts';
import type { BenchRow } from './bench/types.ts';

/**
 * The bench's model section (scripts/bench/model.ts: train step, prefill, decode of the bench model)
 * on each backend named, one process per backend so neither warms the other, side by side with
 * wall and process CPU time. Prints a table; writes nothing.
 *   npx tsx scripts/bench-backends.ts [--backends wasm,native] [--quick]
 */
function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function child(name: BackendName, quick: boolean): Promise<void> {
  const choice = await initBackend(name);
  const { benchModel } = await import('./bench/model.ts');
  const rows = await benchModel(quick);
  process.stdout.write(`${JSON.stringify({ backend: choice.backend, kernels: choice.native?.mode ?? 'n/a', rows })}\n`);
}

function parent(names: string[], quick: boolean): void {
  const results: { backend: string; kernels: string; rows: BenchRow[] }[] = [];
  for (const name of names) {
    const argv = ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', name, ...(quick ? ['--quick'] : [])];
    const r = spawnSync(process.execPath, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    if (r.status !== 0 || !line.startsWith('{')) throw new Error(`backend ${name}: exit ${r.status}\n${r.stdout}`);
    results.push(JSON.parse(line) as (typeof results)[number]);
  }
  const metrics = results[0]!.rows.map((r) => `${r.metric} (${r.unit})`);
  const head = ['metric', ...results.map((r) => `${r.backend} (kernels: ${r.kernels})`)];
  const cells = metrics.map((m, i) => [
    m,
    ...results.map((r) => r.rows[i]!.value.toFixed(r.rows[i]!.value >= 100 ? 0 : 2)),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const fmt = (c: string[]): string =>
    c.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  ');
  console.log(`cores ${availableParallelism()}${quick ? ', quick' : ''}`);
  console.log([fmt(head), ...cells.map(fmt)].join('\n'));
}

const quick = process.argv.includes('--quick');
const only = flag('child');
if (only) await child(only as BackendName, quick);
else parent((flag('backends') ?? 'wasm,native').split(','), quick);
