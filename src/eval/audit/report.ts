import type { AurocEstimate, BlamedShare } from '../credit-quality.ts';
import type { AuditArm } from './arms.ts';
import type { CallCounts, CreditQuality, Stratum } from './quality.ts';

/**
 * The credit audit's result (docs/credit-audit.md): `audit.json` holds it, `audit.md` and the
 * command's output show it as two tables, AUROCs and blamed shares, one row per credit.
 */
export const AUDIT_KIND = 'sharp-credit-audit';

interface AuditSetup {
  model: string;
  /** Hash of the checkpoint's files (eval/run/checkpoint-hash.ts). */
  modelHash: string;
  /** The config file, or null for the schema defaults. */
  config: string | null;
  n: number;
  seed: number;
  /** Bootstrap resamples of the trajectories. */
  reps: number;
  temperature: number;
  replayTemperature: number | null;
  replays: number;
  replayMode: 'final' | 'replan';
  success: string;
  hopMatchF1: number;
}

export interface ArmReport extends AuditArm {
  quality: CreditQuality;
  noise: number;
  replays: number;
  seconds: number;
}

export interface AuditReport {
  kind: typeof AUDIT_KIND;
  version: 1;
  setup: AuditSetup;
  trajectories: number;
  successes: number;
  calls: Record<Stratum, CallCounts>;
  rolloutSeconds: number;
  arms: ArmReport[];
}

const f2 = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(2));
const f3 = (x: number): string => x.toFixed(3);
const rocCell = (e: AurocEstimate): string =>
  e.auroc === null
    ? `n/a (${e.positives} wrong, ${e.negatives} right)`
    : `${f2(e.auroc)} [${f2(e.low)}, ${f2(e.high)}]`;
const shareCell = (s: BlamedShare): string => (s.share === null ? 'n/a' : `${f2(s.share)} (${s.blamed}/${s.calls})`);
const armName = (a: AuditArm): string => {
  if (a.ceiling) return `${a.name} (ceiling)`;
  if (a.value === 'likelihood')
    return a.form === 'sequential' ? 'likelihood, sequential gain' : `${a.method} + likelihood`;
  return `loo + ${a.name}`;
};

export function auditMarkdown(r: AuditReport): string {
  const s = r.setup;
  const c = r.calls;
  const lines = [
    '## Credit audit',
    '',
    `- model ${s.model}, config ${s.config ?? '(defaults)'}, seed ${s.seed}`,
    `- ${r.trajectories} trajectories (${r.successes} successes) at temperature ${s.temperature}, rolled out in ` +
      `${r.rolloutSeconds.toFixed(1)} s`,
    `- worker calls: ${c.overall.calls} (${c.overall.wrong} wrong, ${c.overall.right} right, ` +
      `${c.overall.unjudged} unjudged, ${c.overall.planted} planted); in failures ${c.failure.wrong} wrong / ` +
      `${c.failure.right} right, in successes ${c.success.wrong} wrong / ${c.success.right} right`,
    `- replays per coalition ${s.replays}, mode ${s.replayMode}, replay temperature ` +
      `${s.replayTemperature ?? s.temperature}; 95% intervals from ${s.reps} bootstrap resamples of the ` +
      `trajectories`,
    '',
    'AUROC of -credit for a wrong report (0.5: credit does not tell wrong from right; 1: every wrong report below ' +
      'every right one)',
    '',
    '| credit | failures | successes | overall | noise floor | replays | seconds |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...r.arms.map(
      (a) =>
        `| ${armName(a)} | ${rocCell(a.quality.auroc.failure)} | ${rocCell(a.quality.auroc.success)} | ` +
        `${rocCell(a.quality.auroc.overall)} | ${f3(a.noise)} | ${a.replays} | ${a.seconds.toFixed(1)} |`,
    ),
    '',
    'Share of reports blamed (credit < 0)',
    '',
    '| credit | wrong, failures | wrong, successes | right, failures | right, successes | planted, failures | ' +
      'planted, successes |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...r.arms.map((a) => {
      const b = a.quality.blamed;
      return (
        `| ${armName(a)} | ${shareCell(b.wrong.failure)} | ${shareCell(b.wrong.success)} | ` +
        `${shareCell(b.right.failure)} | ${shareCell(b.right.success)} | ${shareCell(b.planted.failure)} | ` +
        `${shareCell(b.planted.success)} |`
      );
    }),
  ];
  if (r.arms.some((a) => a.ceiling))
    lines.push(
      '',
      "The oracle is a ceiling, not a credit: its worker reward is the judge's own label (1 right, 0 wrong), so " +
        'its AUROC is 1 and it blames nothing by construction.',
    );
  return `${lines.join('\n')}\n`;
}
