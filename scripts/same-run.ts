/**
 * Whether two run folders trained the same: `npx tsx scripts/same-run.ts <runA> <runB>`.
 * metrics.jsonl must hold the same steps with the same keys and values once the wall-clock fields
 * (`time`, `perf/*`) are left out, and the latest checkpoints the same bytes in every file but
 * trainer_state.json, whose config hash covers the run name. Exit 0 when they match, 1 with the
 * differences listed otherwise. Key order is not compared (JSON objects are unordered).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { latestCheckpoint } from '../src/train/checkpoints/checkpoint.ts';
import { readMetrics, type MetricsLine } from '../src/train/metrics/jsonl.ts';

const wallClock = (key: string): boolean => key === 'time' || key.startsWith('perf/');

/** The differences between two metrics files' lines, wall-clock fields left out. */
export function metricsDifferences(a: readonly MetricsLine[], b: readonly MetricsLine[]): string[] {
  const out: string[] = [];
  if (a.length !== b.length) out.push(`metrics.jsonl: ${a.length} lines against ${b.length}`);
  a.slice(0, b.length).forEach((x, i) => {
    const y = b[i] as MetricsLine;
    const keys = new Set([...Object.keys(x), ...Object.keys(y)].filter((k) => !wallClock(k)));
    for (const k of keys)
      if (!Object.is(x[k], y[k]))
        out.push(`metrics.jsonl step ${x.step}: ${k} ${JSON.stringify(x[k])} against ${JSON.stringify(y[k])}`);
  });
  return out;
}

async function latestDir(run: string): Promise<string> {
  const last = await latestCheckpoint(run);
  if (!last) throw new Error(`${run}: no checkpoint`);
  return last.dir;
}

/** The differences between two run folders (empty: the same training). */
export async function runDifferences(a: string, b: string): Promise<string[]> {
  const out = metricsDifferences(readMetrics(join(a, 'metrics.jsonl')), readMetrics(join(b, 'metrics.jsonl')));
  const [ca, cb] = [await latestDir(a), await latestDir(b)];
  const files = new Set([...readdirSync(ca), ...readdirSync(cb)]);
  files.delete('trainer_state.json');
  for (const f of [...files].sort()) {
    if (!existsSync(join(ca, f)) || !existsSync(join(cb, f))) out.push(`checkpoint: ${f} is in one run only`);
    else if (!readFileSync(join(ca, f)).equals(readFileSync(join(cb, f)))) out.push(`checkpoint: ${f} differs`);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [a, b] = process.argv.slice(2);
  if (!a || !b) {
    console.error('usage: npx tsx scripts/same-run.ts <runA> <runB>');
    process.exit(2);
  }
  const diffs = await runDifferences(a, b);
  console.log(
    diffs.length === 0 ? 'same metrics (wall-clock fields left out) and the same checkpoint bytes' : diffs.join('\n'),
  );
  process.exit(diffs.length === 0 ? 0 : 1);
}
