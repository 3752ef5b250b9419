import { basename, join, resolve } from 'node:path';
import { checkpointHash } from '../eval/run/checkpoint-hash.ts';
import { existsSync } from 'node:fs';
import { claimOutDir, markOutDir } from '../fs/output-guard.ts';
import { checkedConfig, loadConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { listBenchmarks, benchmarkNames } from '../eval/benchmarks.ts';
import { successFunction } from '../credit/success.ts';
import { lmCandidateScorer, writePreferencePairs, type CandidateScorer } from '../credit/index.ts';
import { checkGoldAnswerTokens, stepScorer, type LikelihoodScorer } from '../credit/likelihood-scorer.ts';
import { breakdownMarkdown, mergeBreakdowns } from '../eval/breakdown.ts';
import { CreditLog, creditMarkdown } from '../eval/run/credit.ts';
import { StageLog } from '../eval/run/stages.ts';
import { checkSetup, MANIFEST_FILE } from '../eval/run/manifest.ts';
import { loadModel, resolveModelDir } from '../eval/run/model.ts';
import { createProgress } from '../run/progress.ts';
import { runEvalLoop, type EvalLoopStats } from '../eval/run/runner.ts';
import { finishEvalSession, openEvalSession, type EvalResult, type EvalSession } from '../eval/session.ts';
import type { EvalReport } from '../eval/report.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { LmPolicy } from '../rollout/lm-policy.ts';
import { Rng } from '../random/rng.ts';
import type { AgentsMode } from '../rollout/engine.ts';
import type { Policy } from '../rollout/policy.ts';
import { expertPolicy } from '../rollout/scripted/expert.ts';
import type { BackendChoice, EvalFlags } from './commands.ts';
import { configFrom, startTools, withRun } from './stages/run-setup.ts';
import { evalRetrieval } from './stages/eval-retrieval.ts';
import { checkEvalCredit, checkExpertData, usesLikelihood } from './stages/preflight.ts';
import { UserError } from '../errors.ts';

/**
 * `sharp eval`: runs the agents on a benchmark and writes the official-format
 * predictions, metrics.json, report.md (breakdowns) and, with --credit, the SHARP credit report.
 * An interrupted eval resumes from <out>/predictions.log.jsonl and skips the ids already predicted.
 * Flags: src/recipes/commands.ts. `--policy expert` runs the scripted expert of src/rollout/scripted (no
 * model): a reference run on synthetic data, as `sharp rollout --policy expert`. `evaluate` is the
 * recipe itself, the library's `evaluate` (src/index.ts); `run` is the command around it.
 */
const repoRoot = resolve(import.meta.dirname, '../..');
/** Episodes per engine run: enough to fill the decoding batch, few enough that a kill loses little. */
const BATCH_EPISODES = 16;

function limitOf(opts: { limit?: number }, cfg: Config): number {
  // The flag is "the first n": 0 would silently mean all (eval.limit's meaning of 0), so it is refused.
  if (opts.limit !== undefined && !(opts.limit >= 1))
    throw new UserError(
      `--limit expects an integer >= 1 (the first n items; leave it out to evaluate all), got '${opts.limit}'`,
    );
  const n = opts.limit ?? cfg.eval.limit;
  if (!Number.isInteger(n) || n < 0) throw new UserError(`--limit expects a non-negative integer, got '${n}'`);
  return n;
}

function checkpointHashOf(dir: string): string {
  try {
    return checkpointHash(dir);
  } catch (err) {
    throw new UserError(
      `--model ${dir}: cannot read the checkpoint ` +
        `(${(err instanceof Error ? err.message : String(err)).split('\n')[0]})`,
    );
  }
}

function openSession(bench: string, data: string, limit: number, out: string): EvalSession {
  try {
    return openEvalSession({ bench, data, limit, out, repoRoot });
  } catch (err) {
    // The user format's errors already name the file and line (FILE:LINE: reason).
    if (err instanceof UserError) throw err;
    throw new UserError(`eval: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  }
}

/**
 * The output folder: new, empty, an earlier eval's (its marker, or eval-setup.json of a folder made
 * before the marker existed); never the model's folder (src/fs/output-guard.ts).
 */
function evalOutDir(dir: string, inputs: { path: string; what: string }[]): string {
  const claim = { command: 'eval', flag: 'eval: --out', inputs, forceable: false };
  const earlier = existsSync(join(dir, MANIFEST_FILE));
  claimOutDir(dir, { ...claim, force: earlier });
  return markOutDir(dir, claim);
}

export interface EvaluateOptions {
  /** The parsed config (loadConfig); default: the schema's defaults. */
  config?: Config;
  /** Benchmark name (`sharp eval --list`; `jsonl` for your own questions); default eval.bench. */
  bench?: string;
  /** The benchmark file; default eval.data, else the benchmark's shipped sample. */
  data?: string;
  /** Checkpoint folder; default model.path. */
  model?: string;
  /** Evaluate the first n episodes (n >= 1); default eval.limit (0: all). */
  limit?: number;
  /** Output folder; default eval.out, else <run.dir>/eval/<bench>-<agents>-<model folder name>. */
  out?: string;
  /** The agent system; default eval.agents. */
  agents?: AgentsMode;
  /** Also run counterfactual credit (credit.method loo or shapley) and report it. */
  credit?: boolean;
  /** lm (default): the checkpoint; expert: the scripted expert, no model (needs gold decompositions). */
  policy?: 'lm' | 'expert';
  /** episode (default): each question's own paragraphs; open: one index of every paragraph of the file. */
  retrieval?: 'episode' | 'open';
  /** Search this BM25 index folder (`sharp index build`). */
  index?: string;
  /** Search a Search-R1 retrieval server (its POST /retrieve URL). */
  retriever?: string;
  /** Tensor backend; default: the SHARP_BACKEND environment variable, then run.backend. */
  backend?: BackendChoice;
}

export interface EvaluateResult {
  /** The output folder. */
  out: string;
  bench: string;
  agents: AgentsMode;
  /** Episodes evaluated, with those predicted by an earlier, resumed invocation. */
  episodes: number;
  /** What this invocation ran: episodes, decoding calls (`steps`), largest batch, seconds. */
  run: EvalLoopStats;
  /** metrics.json: the official numbers (`metrics`, `headline`), retrieval recall, breakdowns, settings. */
  report: EvalReport;
  /** The files written: predictions, gold subset, metrics.json, report.md; credit.json and pairs.jsonl with credit. */
  files: EvalResult['files'] & { credit?: string; pairs?: string };
  /** Preference pairs written to files.pairs (credit with credit.failurePairs). */
  pairs?: number;
}

/**
 * Evaluates as `sharp eval` does: official-format predictions, metrics.json, report.md (and with
 * `credit` the credit report) in the output folder; an interrupted evaluation resumes there.
 */
export async function evaluate(opts: EvaluateOptions = {}): Promise<EvaluateResult> {
  const cfg = opts.config === undefined ? loadConfig() : checkedConfig(opts.config);
  const bench = opts.bench ?? cfg.eval.bench;
  if (!benchmarkNames().includes(bench))
    throw new UserError(`eval: unknown benchmark '${bench}' (known: ${benchmarkNames().join(', ')})`);
  const data = opts.data ?? cfg.eval.data;
  const limit = limitOf(opts, cfg);
  const agents: AgentsMode = opts.agents ?? cfg.eval.agents;
  const policyName = opts.policy ?? 'lm';
  const model = policyName === 'lm' ? resolveModelDir(opts.model, cfg, repoRoot) : { dir: 'scripted-expert' };
  if (model.note) process.stderr.write(`sharp eval: ${model.note}\n`);
  // Credit the data cannot give, and an expert without decompositions to follow, are refused before the output
  // folder is claimed.
  if (opts.credit === true && (cfg.credit.method === 'broadcast' || cfg.credit.method === 'matpo'))
    throw new UserError(`--credit needs credit.method loo or shapley (it is ${cfg.credit.method})`);
  if (opts.credit === true) checkEvalCredit(cfg, { bench, data, limit, repoRoot });
  if (policyName === 'expert') checkExpertData({ bench, data, limit, repoRoot });
  // The user tools start before the output folder is claimed: one that cannot start leaves none.
  await startTools(cfg);
  const out = evalOutDir(
    opts.out || cfg.eval.out || join(cfg.run.dir, 'eval', `${bench}-${agents}-${basename(model.dir)}`),
    policyName === 'lm' ? [{ path: model.dir, what: '--model' }] : [],
  );
  const session = openSession(bench, data, limit, out);
  const { rollout: r, setup: retrieval } = await evalRetrieval(opts, cfg.rollout, session.dataFile, out);
  // The weights' content, not only their path: a checkpoint replaced in place must not resume.
  const modelHash = policyName === 'lm' ? checkpointHashOf(model.dir) : 'scripted-expert';
  const setup = {
    benchmark: bench,
    data: session.dataFile,
    model: model.dir,
    modelHash,
    agents,
    temperature: cfg.eval.temperature,
    protocol: r.protocol,
    seed: cfg.run.seed,
    ...(retrieval ? { retrieval } : {}),
  };
  checkSetup(out, setup);

  const credit:
    | {
        cfg: typeof cfg.credit;
        log: CreditLog;
        recordDir: string;
        score?: CandidateScorer;
        likelihood?: LikelihoodScorer;
      }
    | undefined =
    opts.credit === true
      ? { cfg: cfg.credit, log: CreditLog.open(join(out, 'credit.log.jsonl')), recordDir: out }
      : undefined;
  // A resumed --credit run also needs credit for episodes predicted earlier without it: those are reported as missing.
  // Benchmarks with a gold decomposition (MuSiQue, the synthetic world) also get the per-stage breakdown.
  const decomposed = session.episodes.some((e) => (e.decomposition?.length ?? 0) > 0);
  const stages = decomposed
    ? {
        log: StageLog.open(join(out, 'stages.log.jsonl')),
        success: successFunction(cfg.credit.success, { f1Threshold: cfg.credit.f1Threshold }),
      }
    : undefined;
  let stats: EvalLoopStats = { ran: 0, steps: 0, requests: 0, maxBatch: 0, seconds: 0 };
  const pending = session.pending();
  if (pending.length > 0) {
    stats = await withRun({ cfg, backendFlag: opts.backend, tensors: policyName === 'lm' }, async () => {
      let policy: Policy = expertPolicy();
      let dispose = (): void => {};
      if (policyName === 'lm') {
        const { model: lm, tokenizer } = await loadModel(model.dir);
        dispose = () => lm.dispose();
        // The llm judge (credit.messageLevel / credit.failurePairs) scores with the evaluated model.
        if (credit && cfg.credit.judge === 'llm') credit.score = lmCandidateScorer(lm, tokenizer, r.maxContext);
        if (credit && usesLikelihood(cfg.credit)) {
          checkGoldAnswerTokens(session.episodes, tokenizer, r.maxNewTokens, `eval --credit: ${bench}`);
          credit.likelihood = stepScorer(lm, tokenizer, r, cfg.credit);
        }
        policy = new LmPolicy(lm, tokenizer, {
          temperature: cfg.eval.temperature,
          topK: r.topK,
          topP: r.topP,
          maxContext: r.maxContext,
          rng: new Rng(cfg.run.seed),
        });
      }
      const progress = createProgress({
        total: session.episodes.length,
        done: session.episodes.length - pending.length,
        label: `eval ${bench}`,
      });
      try {
        return await runEvalLoop({
          session,
          policy,
          engine: { cfg: r, agents },
          batchEpisodes: BATCH_EPISODES,
          credit,
          stages,
          progress,
        });
      } finally {
        progress.stop();
        dispose();
      }
    });
  }

  const extra: string[] = [];
  if (stages) {
    const b = mergeBreakdowns(stages.log.collect(session.keys));
    extra.push(breakdownMarkdown(b));
    writeFileAtomic(join(out, 'stages.json'), `${JSON.stringify(b, null, 2)}\n`);
  }
  const files: { credit?: string; pairs?: string } = {};
  let pairs: number | undefined;
  if (credit) {
    const { report, episodes } = credit.log.report(session.keys);
    extra.push(creditMarkdown(report, episodes, cfg.credit));
    files.credit = join(out, 'credit.json');
    writeFileAtomic(files.credit, `${JSON.stringify({ episodes, ...report }, null, 2)}\n`);
    // credit.failurePairs: the pairs of every episode (resumed ones included) for `sharp dpo`.
    if (cfg.credit.failurePairs) {
      const written = credit.log.pairs(session.keys);
      files.pairs = join(out, 'pairs.jsonl');
      writePreferencePairs(files.pairs, written);
      pairs = written.length;
    }
  }
  const settings = {
    model: model.dir,
    agents,
    limit,
    temperature: cfg.eval.temperature,
    protocol: r.protocol,
    seed: cfg.run.seed,
  };
  const result = finishEvalSession(
    session,
    { ...settings, ...(retrieval ? { retrieval } : {}) },
    extra,
    agents === 'direct' ? undefined : r.search.topK,
  );
  return {
    out,
    bench,
    agents,
    episodes: session.episodes.length,
    run: stats,
    report: result.report,
    files: { ...result.files, ...files },
    ...(pairs === undefined ? {} : { pairs }),
  };
}

/** `sharp eval`: --list, or the config (--config, --set), evaluate, then the result lines. */
export async function run(opts: EvalFlags): Promise<void> {
  if (opts.list === true) {
    process.stdout.write(`${listBenchmarks()}\n`);
    return;
  }
  const { config: _file, set: _set, list: _list, ...given } = opts;
  const res = await evaluate({ ...given, config: configFrom(opts) });
  const { report, files, run: stats } = res;
  const numbers = Object.entries(report.metrics)
    .map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(3)}`)
    .join(', ');
  process.stdout.write(
    `eval ${res.bench} (${res.agents}): ${res.episodes} episodes (${stats.ran} run now in ` +
      `${stats.seconds.toFixed(1)} s, ${stats.steps} decoding calls, largest batch ` +
      `${stats.maxBatch})\n${numbers}\n` +
      (report.retrieval
        ? `retrieval: ${Object.entries(report.retrieval)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}\n`
        : '') +
      `wrote ${files.predictions}, ${files.metrics}, ${files.report}${files.credit ? `, ${files.credit}` : ''}${
        files.pairs ? `, ${files.pairs} (${res.pairs} pairs)` : ''
      }\n`,
  );
}
