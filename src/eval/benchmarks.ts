import { musique } from './bench/musique.ts';
import { hotpotqa, twoWiki } from './bench/hotpot.ts';
import { frames, webwalkerqa } from './bench/open-qa.ts';
import { gaia } from './bench/gaia.ts';
import { docmath } from './bench/docmath.ts';
import { userJsonl } from './bench/user-jsonl.ts';
import type { Benchmark } from './types.ts';

/**
 * The benchmark registry (`sharp eval --list`): name -> reader, official metric, shipped
 * sample. The only place a benchmark name is switched on.
 */
export const BENCHMARKS: Readonly<Record<string, Benchmark>> = Object.freeze({
  musique,
  hotpotqa,
  '2wiki': twoWiki,
  frames,
  webwalkerqa,
  gaia,
  docmath,
  jsonl: userJsonl,
});

export function benchmarkNames(): string[] {
  return Object.keys(BENCHMARKS);
}

/** The benchmark called `name`; a one-line error listing the known names otherwise. */
export function getBenchmark(name: string): Benchmark {
  const b = BENCHMARKS[name];
  if (!b) throw new Error(`unknown benchmark '${name}' (known: ${benchmarkNames().join(', ')})`);
  return b;
}

/** Text for `sharp eval --list`: one benchmark per line with its metric and sample. */
export function listBenchmarks(): string {
  const w = Math.max(...benchmarkNames().map((n) => n.length));
  return benchmarkNames()
    .map((n) => {
      const b = BENCHMARKS[n];
      return (
        `${n.padEnd(w)}  ${b.description}\n${' '.repeat(w)}  metric: ${b.metric}\n${' '.repeat(w)}  sample: ` +
        `${b.sample}`
      );
    })
    .join('\n');
}
