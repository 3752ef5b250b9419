/**
 * `sharp eval --credit`: SHARP counterfactual credit of each evaluated trajectory
 * (credit.method, credit.replayMode), through the credit module's engine replay
 * runner, and the helpful / neutral / harmful report over the run. Each episode's credit is appended
 * to credit.log.jsonl as it is computed, so a resumed eval reports over all its episodes, not only
 * those of the last invocation.
 */
import { appendFileSync, existsSync } from 'node:fs';
import { z } from 'zod';
import {
  creditReport,
  engineReplayRunner,
  judgeOptions,
  parsePreferencePair,
  replaySettings,
  type CandidateScorer,
  type CreditConfig,
  type CreditReport,
  type PreferencePair,
} from '../../credit/index.ts';
import { getProtocol } from '../../rollout/protocol/index.ts';
import type { AgentCredit } from '../../credit/reward.ts';
import type { TrajectoryCreditSummary } from '../../credit/report.ts';
import type { Episode } from '../../data/episode.ts';
import type { EngineOptions } from '../../rollout/engine.ts';
import type { Policy } from '../../rollout/policy.ts';
import type { Trajectory } from '../../rollout/types.ts';
import { readJsonl } from '../../fs/jsonl.ts';
import { dropTornTail } from '../../fs/torn-tail.ts';
import { groupRecord, type GroupRecord } from '../../credit/record.ts';
import { planReplays } from '../../credit/plan.ts';
import { scorePlan, type LikelihoodScorer } from '../../credit/likelihood-scorer.ts';
import { assignCredit, evaluatePlan } from '../../credit/assign.ts';
import { ReplayAnswers } from '../../credit/record.ts';
import { outcomeFunction } from '../../credit/outcome.ts';

export interface EpisodeCredit {
  summary: TrajectoryCreditSummary;
  credits: AgentCredit[];
  /** credit.failurePairs: the DPO pair of a failed trajectory whose first error had an accepted repair. */
  pairs: PreferencePair[];
}

/**
 * Credit of one trajectory per episode (eval runs groups of one); replays of each episode are batched
 * by the credit module. With `records`, each episode's trajectory, credit and replayed answers are
 * pushed there too (for `sharp view`). credit.messageLevel and credit.failurePairs use the judge
 * credit.judge names (`score` serves the llm judge); credit.value likelihood scores with `likelihood`.
 */
export async function creditOf(
  policy: Policy,
  engine: EngineOptions,
  cfg: CreditConfig,
  trajs: readonly Trajectory[],
  eps: readonly Episode[],
  records?: GroupRecord[],
  score?: CandidateScorer,
  likelihood?: LikelihoodScorer,
): Promise<EpisodeCredit[]> {
  // Evaluation replays share one fixed base of common random numbers: trajectory ids tell the streams apart.
  const replays = engineReplayRunner(policy, engine, replaySettings(cfg, 0));
  const judged = judgeOptions(cfg, policy, getProtocol(engine.cfg.protocol), engine.cfg.maxNewTokens, score);
  const outcome = outcomeFunction(cfg);
  const out: EpisodeCredit[] = [];
  // Sequential: the policy serves one batched engine run at a time. The same stages as training's step.
  for (const [i, traj] of trajs.entries()) {
    const plan = planReplays([traj], eps[i], cfg);
    const replayed = plan.items.length > 0 ? await replays(plan.items) : [];
    // credit.value likelihood: the checkpoint scores the planned contexts instead of replaying them.
    const { tables } = evaluatePlan(plan, replayed, await scorePlan(plan, likelihood), cfg, outcome);
    const { credited, pairs } = await assignCredit(plan, tables, cfg, judged);
    if (records) records.push(groupRecord(eps[i], credited, new ReplayAnswers(plan, replayed), cfg, pairs));
    const t = credited[0].credit;
    const summary: TrajectoryCreditSummary = {
      trajectoryId: t.trajectoryId,
      deltas: [...t.deltas],
      success: t.success,
      noise: t.noise,
    };
    if (t.efficiencyResidual !== undefined) summary.efficiencyResidual = t.efficiencyResidual;
    out.push({ summary, credits: credited[0].agents, pairs });
  }
  return out;
}

const lineSchema = z.object({
  key: z.string(),
  summary: z.object({
    trajectoryId: z.string(),
    deltas: z.array(z.number()),
    efficiencyResidual: z.number().optional(),
    success: z.number().optional(),
    noise: z.number().optional(),
  }),
  credits: z.array(
    z.object({
      trajectoryId: z.string(),
      agent: z.number().int(),
      role: z.enum(['planner', 'worker']),
      delegation: z.number().int().nullable(),
      parts: z.object({ broadcast: z.number(), marginal: z.number(), tool: z.number() }),
      total: z.number(),
    }),
  ),
});

/** Append-only log of per-episode credit, keyed like the prediction log; a torn last line is ignored. */
export class CreditLog {
  private readonly done = new Map<string, EpisodeCredit>();

  private constructor(readonly file: string) {}

  static open(file: string): CreditLog {
    const log = new CreditLog(file);
    if (!existsSync(file)) return log;
    // A torn last line (kill mid-append) is dropped, so the next append starts on a fresh line.
    dropTornTail(file);
    for (const { line, value: v } of readJsonl(file, { tornTail: true })) {
      const r = lineSchema.safeParse(v);
      if (!r.success)
        throw new Error(
          `${file}:${line}: ${r.error.issues[0].path.join('.') || '(record)'}: ${r.error.issues[0].message}`,
        );
      const rawPairs = (v as { pairs?: unknown }).pairs;
      if (rawPairs !== undefined && !Array.isArray(rawPairs))
        throw new Error(`${file}:${line}: pairs: must be an array`);
      const pairs = (rawPairs ?? []).map((p: unknown, j: number) =>
        parsePreferencePair(p, `${file}:${line}: pairs[${j}]`),
      );
      log.done.set(r.data.key, { summary: r.data.summary, credits: r.data.credits, pairs });
    }
    return log;
  }

  has(key: string): boolean {
    return this.done.has(key);
  }

  append(key: string, c: EpisodeCredit): void {
    appendFileSync(this.file, `${JSON.stringify({ key, ...c })}\n`);
    this.done.set(key, c);
  }

  /** The failure-path DPO pairs of `keys`' episodes (credit.failurePairs), in key order. */
  pairs(keys: readonly string[]): PreferencePair[] {
    return keys.flatMap((k) => this.done.get(k)?.pairs ?? []);
  }

  /** The run's credit report over `keys` (episodes without a credit line are not counted), and how many counted. */
  report(keys: readonly string[]): { report: CreditReport; episodes: number } {
    const got = keys.map((k) => this.done.get(k)).filter((c): c is EpisodeCredit => c !== undefined);
    return {
      report: creditReport(
        got.map((c) => c.summary),
        got.flatMap((c) => c.credits),
      ),
      episodes: got.length,
    };
  }
}

const f3 = (v: number): string => v.toFixed(3);

/** The credit section of report.md (SHARP's helpful / harmful worker-call analysis). */
export function creditMarkdown(r: CreditReport, episodes: number, cfg: CreditConfig): string {
  const lines = [
    '## Credit (SHARP counterfactuals)',
    '',
    `- method: ${cfg.method}, replay mode: ${cfg.replayMode}, replays per coalition: ${cfg.replays}`,
    `- episodes: ${episodes}, worker calls: ${r.workerCalls}`,
    '',
    '| worker calls | fraction |',
    '| --- | --- |',
    `| helpful (Delta > 0) | ${f3(r.helpful)} |`,
    `| neutral (Delta = 0) | ${f3(r.neutral)} |`,
    `| harmful (Delta < 0) | ${f3(r.harmful)} |`,
    '',
    '| role | mean credit | mean marginal |',
    '| --- | --- | --- |',
  ];
  for (const role of Object.keys(r.meanCredit) as Array<keyof typeof r.meanCredit>) {
    lines.push(`| ${role} | ${f3(r.meanCredit[role] ?? 0)} | ${f3(r.meanMarginal[role] ?? 0)} |`);
  }
  if (r.maxEfficiencyResidual !== null)
    lines.push('', `- max Shapley efficiency residual: ${r.maxEfficiencyResidual.toExponential(2)}`);
  return lines.join('\n');
}
