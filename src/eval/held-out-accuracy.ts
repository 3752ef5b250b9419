import type { Config } from '../config/schema.ts';
import { hedgedReports } from './hedging.ts';
import { fullCoalition, leaveOneOutCoalitions, workerCount } from '../credit/coalitions.ts';
import { evaluateCoalitions, valueOf, type ValueTable } from '../credit/counterfactual.ts';
import { looDeltas } from '../credit/loo.ts';
import { engineReplayRunner } from '../credit/engine-adapters.ts';
import { creditReport, type TrajectoryCreditSummary } from '../credit/report.ts';
import { successFunction } from '../credit/success.ts';
import { accuracyOutcome } from '../credit/outcome.ts';
import type { Episode } from '../data/episode.ts';
import { plantedByEpisode, plantedTotal, type PlantedReports } from './planted.ts';
import { plantedOf } from '../data/synth/record.ts';
import { stageBreakdown, wilsonInterval, type StageBreakdown } from './breakdown.ts';
import { LmPolicy, samplingAt } from '../rollout/lm-policy.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { rollout, type EngineOptions } from '../rollout/engine.ts';
import type { Policy } from '../rollout/policy.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';

/**
 * Held-out accuracy of the trained agent system ("held-out accuracy before and after RL"): k
 * trajectories per held-out episode (k = 1 for the validation curves, eval.testSamples on the test
 * split) through the real engine with the LM as every agent's policy, scored by the training
 * success function (credit.success), so the number is the one RL optimises.
 * Sampling follows eval.temperature (0 = greedy) with its own RNG seeded by eval.seed: every
 * measurement of a run sees the same draws, and measuring never moves the training RNG.
 *
 * With it: the 95% Wilson interval, the per-stage breakdown (src/eval/breakdown.ts), invalid tool
 * calls, generated tokens, and (eval.creditReport, multi-agent) the helpful / neutral / harmful
 * worker-call rates from leave-one-out replays of every held-out trajectory, whatever credit method
 * trains: the rates measure the policy, not the training signal.
 */
export interface AccuracyResult {
  accuracy: number;
  correct: number;
  /** Trajectories scored: questions x samples. */
  total: number;
  /** Sampled trajectories per question (k; 1 when absent, as written before k existed). */
  samples?: number;
  /**
   * Successes of each question out of its k samples, in episode order (the unit of paired
   * comparisons); with planted claims, its worker calls and the reports among them that repeat the claim.
   */
  questions?: { id: string; correct: number; calls?: number; planted?: number }[];
  /**
   * 95% interval of the accuracy: Wilson's for k = 1; for k > 1 the normal interval of the mean over
   * questions of their per-question accuracy (samples of one question are not independent).
   */
  interval: [number, number];
  /** Trajectories that ended with a final answer at all (protocol learned), as a fraction. */
  answered: number;
  temperature: number;
  breakdown: StageBreakdown;
  /** Worker calls by LOO Delta (> 0, = 0, < 0) as fractions; absent without workers or when off. */
  workerCalls?: { n: number; helpful: number; neutral: number; harmful: number; noiseFloor?: number };
  /** Worker reports that repeat a planted wrong claim (src/eval/planted.ts); absent when no episode has one. */
  planted?: PlantedReports;
  /** Worker reports that name several candidate answers (src/eval/hedging.ts); absent without workers. */
  hedged?: { calls: number; hedged: number };
  /** Generated tokens per trajectory. */
  tokensPerTrajectory: number;
  seconds: number;
}

type AccuracyConfig = Pick<Config, 'rollout' | 'credit' | 'eval'>;

/**
 * Episodes (and replayed trajectories) per engine run. One run batches every agent of every episode
 * into each decoding step; hundreds of long prompts at once need attention scores beyond the wasm
 * heap (300 prompts x 700 tokens: batch x heads x T x T floats = 2.4 GB), so held-out sets run in chunks.
 */
const EVAL_CHUNK = 64;

export async function heldOutAccuracy(
  model: CausalLM,
  tokenizer: Tokenizer,
  episodes: readonly Episode[],
  cfg: AccuracyConfig,
  samples = 1,
): Promise<AccuracyResult> {
  const r = cfg.rollout;
  const t = cfg.eval.temperature;
  const policy = new LmPolicy(model, tokenizer, {
    ...samplingAt(t, r),
    maxContext: r.maxContext,
    rng: new Rng(cfg.eval.seed),
  });
  return policyAccuracy(policy, episodes, cfg, samples);
}

/** Samples per test question: eval.testSamples when sampling, 1 when greedy (greedy samples are all the same). */
export function testSamples(cfg: Pick<Config, 'eval'>): number {
  return cfg.eval.temperature > 0 ? cfg.eval.testSamples : 1;
}

/** 95% normal interval of the mean of per-question accuracies, clipped to [0, 1]. */
export function clusteredInterval(perQuestion: readonly number[]): [number, number] {
  const n = perQuestion.length;
  const mean = perQuestion.reduce((a, b) => a + b, 0) / n;
  const sd = n > 1 ? Math.sqrt(perQuestion.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
  const h = (1.959964 * sd) / Math.sqrt(n);
  return [Math.max(0, mean - h), Math.min(1, mean + h)];
}

/** Accuracy of any policy (`samples` trajectories per episode through the real engine). */
export async function policyAccuracy(
  policy: Policy,
  episodes: readonly Episode[],
  cfg: AccuracyConfig,
  samples = 1,
): Promise<AccuracyResult> {
  if (episodes.length === 0) throw new Error('held-out accuracy: no held-out episodes');
  const t0 = performance.now();
  const engine: EngineOptions = { cfg: cfg.rollout, agents: cfg.rollout.agents };
  const trajectories: Trajectory[] = [];
  const chunk = Math.max(1, Math.floor(EVAL_CHUNK / samples));
  for (let i = 0; i < episodes.length; i += chunk)
    trajectories.push(
      ...(await rollout(policy, episodes.slice(i, i + chunk), { ...engine, groupSize: samples })).trajectories,
    );
  const success = successFunction(cfg.credit.success, { f1Threshold: cfg.credit.f1Threshold });
  const byId = new Map(episodes.map((e) => [e.id, e]));
  const breakdown = stageBreakdown(trajectories, byId, success, { agents: cfg.rollout.agents });
  const answered = trajectories.filter((tr) => tr.finalAnswer !== null).length;
  const total = trajectories.length;
  const correct = breakdown.accuracy.num;
  const perQuestion = new Map(episodes.map((e) => [e.id, 0]));
  for (const tr of trajectories)
    if (success(tr.finalAnswer, (byId.get(tr.episodeId) as Episode).answers) > 0)
      perQuestion.set(tr.episodeId, (perQuestion.get(tr.episodeId) ?? 0) + 1);
  const withClaims = episodes.some((e) => plantedOf(e) !== null);
  const planted = withClaims ? plantedByEpisode(trajectories, episodes) : undefined;
  const questions = episodes.map((e) => ({ id: e.id, correct: perQuestion.get(e.id) ?? 0, ...planted?.get(e.id) }));
  const out: AccuracyResult = {
    accuracy: correct / total,
    correct,
    total,
    samples,
    questions,
    interval:
      samples === 1 ? wilsonInterval(correct, total) : clusteredInterval(questions.map((q) => q.correct / samples)),
    answered: answered / total,
    temperature: cfg.eval.temperature,
    breakdown,
    ...(planted ? { planted: plantedTotal(planted) } : {}),
    tokensPerTrajectory:
      trajectories.reduce((a, tr) => a + tr.messages.reduce((b, m) => b + m.tokenIds.length, 0), 0) / total,
    seconds: 0,
  };
  const hasWorkers = trajectories.some((tr) => tr.agents.length > 1);
  if (hasWorkers) out.hedged = hedgedReports(trajectories);
  if (cfg.eval.creditReport && hasWorkers)
    out.workerCalls = await looWorkerCalls(policy, engine, trajectories, byId, cfg);
  out.seconds = (performance.now() - t0) / 1000;
  return out;
}

/**
 * Helpful / neutral / harmful worker calls of `trajectories` by their LOO Delta: every
 * leave-one-out coalition of every trajectory replayed (credit.replayMode) in ONE batched run.
 */
async function looWorkerCalls(
  policy: Policy,
  engine: EngineOptions,
  trajectories: readonly Trajectory[],
  byId: ReadonlyMap<string, Episode>,
  cfg: AccuracyConfig,
): Promise<NonNullable<AccuracyResult['workerCalls']>> {
  const runner = engineReplayRunner(policy, engine, {
    replayMode: cfg.credit.replayMode,
    placeholder: cfg.credit.placeholder,
    streamSeed: cfg.eval.seed,
  });
  const success = successFunction(cfg.credit.success, { f1Threshold: cfg.credit.f1Threshold });
  const requests = trajectories.map((traj) => ({
    traj,
    episode: byId.get(traj.episodeId) as Episode,
    coalitions: leaveOneOutCoalitions(workerCount(traj)),
  }));
  const tables: ValueTable[] = [];
  for (let i = 0; i < requests.length; i += EVAL_CHUNK)
    tables.push(
      ...(
        await evaluateCoalitions(requests.slice(i, i + EVAL_CHUNK), runner, {
          outcome: accuracyOutcome(success),
          replays: cfg.credit.replays,
        })
      ).tables,
    );
  const summaries: TrajectoryCreditSummary[] = requests.map((req, i) => {
    const table = tables[i] as (typeof tables)[number];
    const k = workerCount(req.traj);
    return {
      trajectoryId: req.traj.id,
      deltas: looDeltas(
        valueOf(table, fullCoalition(k)),
        leaveOneOutCoalitions(k).map((s) => valueOf(table, s)),
      ),
      success: table.recorded,
      noise: table.noise,
    };
  });
  const rep = creditReport(summaries, []);
  return {
    n: rep.workerCalls,
    helpful: rep.helpful,
    neutral: rep.neutral,
    harmful: rep.harmful,
    noiseFloor: rep.noiseFloor ?? 0,
  };
}

/** Namespaced scalars of a held-out measurement for metrics.jsonl (`heldout/accuracy`, `heldout/stage/report`, ...). */
export function heldOutMetrics(r: AccuracyResult): Record<string, number> {
  const out: Record<string, number> = {
    'heldout/accuracy': r.accuracy,
    'heldout/ci_low': r.interval[0],
    'heldout/ci_high': r.interval[1],
    'heldout/n': r.total,
    'heldout/answered': r.answered,
    'heldout/tokens_per_trajectory': r.tokensPerTrajectory,
  };
  const b = r.breakdown;
  const stages = {
    sub_question: b.subQuestion,
    retrieval: b.retrieval,
    report: b.report,
    final_given_reports: b.finalGivenReports,
    invalid_calls: b.invalidCalls,
    off_plan: b.offPlan,
  };
  for (const [k, v] of Object.entries(stages)) if (v.rate !== null) out[`heldout/stage/${k}`] = v.rate;
  if (r.planted?.share !== null && r.planted?.share !== undefined) out['heldout/planted_reports'] = r.planted.share;
  if (r.workerCalls) {
    out['heldout/worker_calls/helpful'] = r.workerCalls.helpful;
    out['heldout/worker_calls/neutral'] = r.workerCalls.neutral;
    out['heldout/worker_calls/harmful'] = r.workerCalls.harmful;
    if (r.workerCalls.noiseFloor !== undefined) out['heldout/worker_calls/noise_floor'] = r.workerCalls.noiseFloor;
  }
  return out;
}
