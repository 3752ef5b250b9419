import type { Trajectory } from '../rollout/types.ts';

/**
 * Hedged worker reports: a report that names several candidate answers ("1949 or 1962", "Ada, Bo")
 * can raise the gold answer's likelihood without being right, which is how a worker could game a
 * likelihood credit (docs/likelihood-credit/README.md). A report hedges when it splits into two or more
 * non-empty parts at a comma, semicolon, slash, vertical bar, newline, or the word "or" / "and". The
 * synthetic world's answers (names, years, counts) never contain these; a benchmark whose answers do
 * ("March 3, 1990") would count them, so the share is compared between arms and before and after RL,
 * never read alone.
 */
const SEPARATORS = /\s*(?:[,;/|\n]|\bor\b|\band\b)\s*/i;

export function hedges(report: string | null): boolean {
  if (report === null) return false;
  return report.split(SEPARATORS).filter((p) => p.trim() !== '').length >= 2;
}

/** Worker reports (workers that answered) and how many of them hedge, over some trajectories. */
export function hedgedReports(trajectories: readonly Trajectory[]): { calls: number; hedged: number } {
  let calls = 0;
  let hedged = 0;
  for (const t of trajectories)
    for (const a of t.agents) {
      if (a.role !== 'worker' || a.answer === null) continue;
      calls += 1;
      if (hedges(a.answer)) hedged += 1;
    }
  return { calls, hedged };
}
