import * as tf from '@tensorflow/tfjs';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { hfConfigFor } from '../../src/model/config.ts';
import { tokenLogprobs } from '../../src/model/logprobs.ts';
import { Rng } from '../../src/random/rng.ts';
import { BENCH_MODEL, benchAdam } from './model.ts';
import type { BenchRow } from './types.ts';

/**
 * Profile section of `npm run bench`: tf.profile of one train step (forward + backward + Adam) of
 * the model section's model and batch, summed per kernel name. The custom-gradient ops run as
 * named scopes (src/model/ops: embed, selectedLogprobs, headLogprobs, checkpointedLayer); a scope's
 * time includes the kernels it runs, which also appear under their own names, so the scopes are
 * listed apart and left out of the kernel total. Their backward kernels run under the kernel names
 * (BatchMatMul, ...). Where the native kernels have the fused ones
 * (native/src/fused.cc), those appear as kernels (SharpRmsNorm, SharpSelectedLogprobs, ...).
 */
const BATCH = 8;
const SEQ = 64;
const WARMUP = 2;

interface ProfileLine {
  name: string;
  calls: number;
  ms: number;
  /** A named scope (custom-gradient op), not a registered kernel. */
  scope: boolean;
}

/**
 * Kernel records of a tf.profile summed by name, slowest first (tf.profile has awaited every time: a number, or an
 * error object counted as 0).
 */
export function summarize(
  kernels: readonly { name: string; kernelTimeMs: unknown }[],
  isKernel: (name: string) => boolean,
): ProfileLine[] {
  const by = new Map<string, ProfileLine>();
  for (const k of kernels) {
    const ms = typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
    const line = by.get(k.name) ?? { name: k.name, calls: 0, ms: 0, scope: !isKernel(k.name) };
    line.calls += 1;
    line.ms += ms;
    by.set(k.name, line);
  }
  return [...by.values()].sort((a, b) => b.ms - a.ms || a.name.localeCompare(b.name));
}

export function profileTable(lines: readonly ProfileLine[]): string {
  const total = lines.filter((l) => !l.scope).reduce((a, l) => a + l.ms, 0);
  const row = (l: ProfileLine): string[] => [
    l.scope ? `${l.name} (scope)` : l.name,
    String(l.calls),
    l.ms.toFixed(2),
    l.scope ? '' : `${((100 * l.ms) / Math.max(total, 1e-9)).toFixed(1)}%`,
  ];
  const cells = [
    ...lines.filter((l) => !l.scope).map(row),
    ['kernels total', String(lines.filter((l) => !l.scope).reduce((a, l) => a + l.calls, 0)), total.toFixed(2), '100%'],
    ...lines.filter((l) => l.scope).map(row),
  ];
  const head = ['op', 'calls', 'ms', 'share'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (c: string[]): string =>
    c.map((x, i) => (i === 0 ? x.padEnd(widths[i] as number) : x.padStart(widths[i] as number))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

/** Profiles one train step after WARMUP unprofiled ones; prints the table; rows: ms per op name. */
export async function benchProfile(quick = false): Promise<BenchRow[]> {
  const model = CausalLM.random(hfConfigFor(BENCH_MODEL), 0);
  const rng = new Rng(1);
  const opt = benchAdam();
  const ids = tf.tensor2d(
    Array.from({ length: BATCH * SEQ }, () => rng.int(0, BENCH_MODEL.vocab - 1)),
    [BATCH, SEQ],
    'int32',
  ); // [B, T]
  const mask = tf.ones([BATCH, SEQ], 'int32') as tf.Tensor2D; // [B, T]
  const step = async (): Promise<void> => {
    const loss = opt.minimize(
      () => tf.neg(tf.mean(tokenLogprobs(model, ids, mask))) as tf.Scalar,
      true,
      model.trainableVariables(),
    );
    await loss?.data();
    loss?.dispose();
  };
  try {
    for (let i = 0; i < (quick ? 1 : WARMUP); i++) await step();
    const info = await tf.profile(step);
    const backend = tf.getBackend();
    const lines = summarize(info.kernels, (name) => tf.getKernel(name, backend) !== undefined);
    console.log(
      `\nper-op profile of one train step (${BATCH}x${SEQ}, ${tf.getBackend()} backend; ` +
        `tf.profile):\n${profileTable(lines)}\n`,
    );
    return lines.map((l) => ({
      section: 'profile',
      metric: `${l.scope ? 'scope' : 'kernel'} ${l.name} (${l.calls} calls)`,
      value: l.ms,
      unit: 'ms',
    }));
  } finally {
    tf.dispose([ids, mask]);
    opt.dispose();
    model.dispose();
  }
}
