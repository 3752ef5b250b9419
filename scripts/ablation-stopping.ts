/**
 * The stopping rule of a pre-registered ablation, read on variance only:
 * `npx tsx scripts/ablation-stopping.ts --config C.yaml DIR [DIR ...] [--against broadcast] [--target 0.03]
 * [--cap 24] [--step 4]`. The finished runs (`<method>-s<seed>` in any of the folders) are paired with the
 * reference arm over the seeds both finished, as `sharp ablate --report` pairs them (same bootstrap), and
 * for each arm its MDE against the reference and the rule's decision are printed: stop (MDE at most the
 * target), extend (the next `step` seeds, for that arm and the reference), or not decidable (MDE above the
 * target at the cap). The differences themselves are never printed, so the rule can be applied before
 * anyone reads them.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/load.ts';
import type { AblationMethod } from '../src/config/sections/ablation.ts';
import { pairwise, readRun, type RunOutcome } from '../src/report/ablation.ts';

export interface StoppingRule {
  target: number;
  cap: number;
  step: number;
}

export type Decision =
  | { action: 'wait'; seeds: number[] }
  | { action: 'stop' }
  | { action: 'extend'; seeds: number[] }
  | { action: 'not decidable' };

/**
 * The rule for one arm: `mde` its MDE against the reference over `seeds` (the seeds both finished),
 * read once every seed of the design (`planned`) is among them. Extending adds the `step` seeds after
 * the largest planned or finished one, never past `cap` seeds in all.
 */
export function decide(
  mde: number,
  seeds: readonly number[],
  planned: readonly number[],
  rule: StoppingRule,
): Decision {
  const left = planned.filter((s) => !seeds.includes(s));
  if (left.length > 0) return { action: 'wait', seeds: left };
  if (mde <= rule.target) return { action: 'stop' };
  if (seeds.length >= rule.cap) return { action: 'not decidable' };
  const next = Math.max(-1, ...seeds, ...planned) + 1;
  const n = Math.min(rule.step, rule.cap - seeds.length);
  return { action: 'extend', seeds: Array.from({ length: n }, (_, i) => next + i) };
}

/** Every finished run named `<method>-s<seed>` directly inside the folders, for the methods given. */
export function finishedRuns(dirs: readonly string[], methods: readonly AblationMethod[]): RunOutcome[] {
  const out: RunOutcome[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir)) throw new Error(`${dir}: no such folder`);
    for (const name of readdirSync(dir).sort()) {
      const m = /^(.+)-s(\d+)$/.exec(name);
      const method = m?.[1] as AblationMethod | undefined;
      if (!m || !method || !methods.includes(method)) continue;
      const run = readRun(join(dir, name), method, Number(m[2]));
      if (run && !out.some((r) => r.method === run.method && r.seed === run.seed)) out.push(run);
    }
  }
  return out.sort((a, b) => a.seed - b.seed || a.method.localeCompare(b.method));
}

/** One line per arm against the reference: seeds paired, MDE, decision. No difference is read out. */
export function stoppingLines(
  runs: readonly RunOutcome[],
  methods: readonly AblationMethod[],
  against: AblationMethod,
  planned: readonly number[],
  rule: StoppingRule,
  bootstrap: { reps: number; seed: number },
): string[] {
  const lines: string[] = [];
  for (const arm of methods.filter((m) => m !== against)) {
    const pair = pairwise([against, arm], runs, bootstrap)[0];
    if (!pair) {
      lines.push(`${arm}: no seed finished beside ${against}`);
      continue;
    }
    const seeds = runs
      .filter((r) => r.method === arm && runs.some((x) => x.method === against && x.seed === r.seed))
      .map((r) => r.seed);
    const d = decide(pair.diff.mde, seeds, planned, rule);
    const what =
      d.action === 'wait'
        ? `no decision yet: the design's seeds ${d.seeds.join(', ')} are not finished`
        : d.action === 'extend'
          ? `extend: seeds ${d.seeds.join(', ')} for ${arm} and ${against}`
          : d.action === 'stop'
            ? `stop: at most ${rule.target}`
            : `not decidable: above ${rule.target} at ${rule.cap} seeds`;
    lines.push(`${arm}: MDE ${pair.diff.mde.toFixed(4)} against ${against} over ${seeds.length} seeds; ${what}`);
  }
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const usage = (why: string): never => {
    console.error(
      `ablation-stopping: ${why}; usage: npx tsx scripts/ablation-stopping.ts --config C.yaml DIR [DIR ...]`,
    );
    return process.exit(2);
  };
  const parse = () => {
    try {
      return parseArgs({
        allowPositionals: true,
        options: {
          config: { type: 'string' },
          against: { type: 'string', default: 'broadcast' },
          target: { type: 'string', default: '0.03' },
          cap: { type: 'string', default: '24' },
          step: { type: 'string', default: '4' },
        },
      });
    } catch (e) {
      return usage((e instanceof Error ? e.message : String(e)).replace(/\s*\n\s*/g, ' '));
    }
  };
  const { values, positionals: args } = parse();
  const config = values.config;
  const against = values.against as AblationMethod;
  const rule = { target: Number(values.target), cap: Number(values.cap), step: Number(values.step) };
  if (!config || args.length === 0) usage('--config and at least one folder are needed');
  if (!Object.values(rule).every((x) => Number.isFinite(x) && x > 0))
    usage('--target, --cap and --step must be positive numbers');
  try {
    const cfg = loadConfig({ file: config });
    const methods = cfg.ablation.methods;
    const runs = finishedRuns(args, methods);
    for (const m of methods)
      console.log(
        `${m}: finished seeds ${runs
          .filter((r) => r.method === m)
          .map((r) => r.seed)
          .join(', ')}`,
      );
    const bootstrap = { reps: cfg.ablation.bootstrap, seed: 0 };
    for (const line of stoppingLines(runs, methods, against, cfg.ablation.seeds, rule, bootstrap)) console.log(line);
  } catch (e) {
    console.error(`ablation-stopping: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  }
}
