/**
 * The loop of `sharp eval`: the session's pending episodes go through the rollout
 * engine `batchEpisodes` at a time (one trajectory each, greedy by default), and each finished
 * episode is recorded at once, so an interrupted run loses at most one batch. Within a batch the
 * engine decodes every generating agent of every episode in one policy call per step,
 * which is what makes eval fast; the batch size bounds memory and resume granularity.
 */
import type { LikelihoodScorer } from '../../credit/likelihood-scorer.ts';
import type { CandidateScorer, CreditConfig } from '../../credit/index.ts';
import { runTrajectories, type EngineOptions, type RunItem } from '../../rollout/engine.ts';
import type { Policy } from '../../rollout/policy.ts';
import type { EvalSession } from '../session.ts';
import { stageBreakdown } from '../breakdown.ts';
import { CreditLog, creditOf } from './credit.ts';
import {
  creditHeader,
  nextEvalStep,
  RECORD_VERSION,
  sampleGroups,
  writeStepRecord,
  type GroupRecord,
} from '../../credit/record.ts';
import type { StageLog } from './stages.ts';
import { predictionOf } from './prediction.ts';
import type { EpisodeProgress as Progress } from '../../run/progress.ts';

export interface EvalLoopOptions {
  session: EvalSession;
  policy: Policy;
  /** Engine options, including the agent system (`agents`: multi, single, direct). */
  engine: EngineOptions;
  /** Episodes per engine run (> 0). */
  batchEpisodes: number;
  /** With --credit: credit.* config and the log the per-episode credit goes to. */
  credit?: {
    cfg: CreditConfig;
    log: CreditLog;
    /** Folder whose trajectories/ gets a credit.recordGroups sample per batch (`sharp view`). */
    recordDir?: string;
    /** Scorer of the llm judge (credit.judge = llm with credit.messageLevel / credit.failurePairs). */
    score?: CandidateScorer;
    /** credit.value likelihood: scores the planned contexts with the evaluated checkpoint. */
    likelihood?: LikelihoodScorer;
  };
  /** Per-episode stage breakdown (benchmarks with a gold decomposition), scored with `success`. */
  stages?: { log: StageLog; success: (answer: string | null, golds: readonly string[]) => number };
  progress?: Progress;
}

export interface EvalLoopStats {
  /** Episodes run by this invocation (the rest were already predicted). */
  ran: number;
  /** policy.generate calls and assistant messages, summed over batches. */
  steps: number;
  requests: number;
  maxBatch: number;
  seconds: number;
}

export async function runEvalLoop(o: EvalLoopOptions): Promise<EvalLoopStats> {
  if (!Number.isInteger(o.batchEpisodes) || o.batchEpisodes < 1)
    throw new Error(`eval: batchEpisodes must be a positive integer (got ${o.batchEpisodes})`);
  const pending = o.session.pending();
  const stats: EvalLoopStats = { ran: 0, steps: 0, requests: 0, maxBatch: 0, seconds: 0 };
  const t0 = performance.now();
  for (let start = 0; start < pending.length; start += o.batchEpisodes) {
    const batch = pending.slice(start, start + o.batchEpisodes);
    // The key is the trajectory id: unique even where a benchmark repeats an id (MuSiQue full).
    const items: RunItem[] = batch.map(({ key, episode }) => ({ id: key, episode, sample: 0 }));
    const { trajectories, stats: s } = await runTrajectories(o.policy, items, o.engine);
    stats.steps += s.steps;
    stats.requests += s.requests;
    stats.maxBatch = Math.max(stats.maxBatch, s.maxBatch);
    const records: GroupRecord[] | undefined = o.credit?.recordDir && o.credit.cfg.recordGroups > 0 ? [] : undefined;
    const credits = o.credit
      ? await creditOf(
          o.policy,
          o.engine,
          o.credit.cfg,
          trajectories,
          batch.map((b) => b.episode),
          records,
          o.credit.score,
          o.credit.likelihood,
        )
      : undefined;
    if (o.credit?.recordDir && records) {
      const dir = o.credit.recordDir;
      writeStepRecord(dir, {
        version: RECORD_VERSION,
        kind: 'eval',
        step: nextEvalStep(dir),
        credit: creditHeader(o.credit.cfg),
        groupsTotal: records.length,
        groups: sampleGroups(records, o.credit.cfg.recordGroups),
      });
    }
    batch.forEach(({ key, episode }, i) => {
      // Credit first: a prediction without its credit line would be skipped by a resumed run.
      if (o.credit && credits) o.credit.log.append(key, credits[i]);
      if (o.stages)
        o.stages.log.append(
          key,
          stageBreakdown([trajectories[i]], new Map([[episode.id, episode]]), o.stages.success, {
            agents: o.engine.agents,
          }),
        );
      o.session.record(key, predictionOf(trajectories[i], episode));
    });
    stats.ran += batch.length;
    o.progress?.tick(batch.length);
  }
  stats.seconds = (performance.now() - t0) / 1000;
  return stats;
}
