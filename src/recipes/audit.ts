import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { checkedConfig, loadConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { engineReplayRunner, replaySettings } from '../credit/engine-adapters.ts';
import { checkGoldAnswerTokens, stepScorer } from '../credit/likelihood-scorer.ts';
import { successFunction } from '../credit/success.ts';
import type { Episode } from '../data/episode.ts';
import { UserError } from '../errors.ts';
import { AUDIT_ARMS, armConfig, armCredit } from '../eval/audit/arms.ts';
import { labelWorkerCalls, type WorkerCall } from '../eval/audit/labels.ts';
import { callCounts, creditQuality } from '../eval/audit/quality.ts';
import { AUDIT_KIND, auditMarkdown, type ArmReport, type AuditReport } from '../eval/audit/report.ts';
import { checkpointHash } from '../eval/run/checkpoint-hash.ts';
import { loadModel, resolveModelDir } from '../eval/run/model.ts';
import { writeFileAtomic, writeJsonlAtomic } from '../fs/atomic.ts';
import { claimOutDir, markOutDir } from '../fs/output-guard.ts';
import { Rng } from '../random/rng.ts';
import { runTrajectories, type EngineOptions } from '../rollout/engine.ts';
import { LmPolicy, samplingAt } from '../rollout/lm-policy.ts';
import type { Trajectory } from '../rollout/types.ts';
import { createProgress } from '../run/progress.ts';
import { auditFlags, type AuditFlags, type BackendChoice } from './commands.ts';
import { configFrom, startTools, withRun } from './stages/run-setup.ts';
import { firstTrainEpisodes } from './stages/train-data.ts';

/**
 * `sharp audit`: credit quality without RL (docs/credit-audit.md). Rolls out one trajectory for each
 * of the first n training questions with the checkpoint (the rollout settings RL samples with),
 * labels every worker call right / wrong / planted with the rule judge, computes the credit of the
 * same trajectories under every counterfactual and the oracle ceiling (eval/audit/arms.ts), and
 * writes how well each tells wrong reports from right ones: audit.json, audit.md, and calls.jsonl
 * (each labelled call with its credit under every arm). Flags: src/recipes/commands.ts.
 */
const repoRoot = resolve(import.meta.dirname, '../..');
/** Trajectories per engine run: their rollouts, and each arm's replays, are decoded together. */
const BATCH = 16;
const FILES = { report: 'audit.json', markdown: 'audit.md', calls: 'calls.jsonl' };

/** Whether `dir` holds an earlier audit (its audit.json says so): the only non-empty folder --out may rewrite. */
function holdsAudit(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(dir, FILES.report), 'utf8')) as { kind?: unknown }).kind === AUDIT_KIND;
  } catch {
    return false;
  }
}

function outDir(opts: { out?: string }, cfg: Config, model: string): string {
  const dir = opts.out || join(cfg.run.dir, 'audit', basename(model));
  const inputs = [
    { path: model, what: '--model' },
    ...(cfg.data.path !== '' ? [{ path: cfg.data.path, what: 'data.path' }] : []),
  ];
  const claim = { command: 'audit', flag: '--out', forceable: false, inputs };
  // An earlier audit (its audit.json says so) is rewritten in place; any other non-empty folder is refused.
  const { dir: abs } = claimOutDir(dir, {
    ...claim,
    force: existsSync(dir) && statSync(dir).isDirectory() && holdsAudit(dir),
  });
  return markOutDir(abs, claim);
}

/** The weights' content, recorded with the result (a checkpoint replaced in place gives another hash). */
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

/**
 * The first n training questions. More than the training split holds is refused: a synthetic source
 * would generate questions RL never trains on, for minutes, and a file has no more to give.
 */
function auditEpisodes(cfg: Config, n: number): Episode[] {
  const split = cfg.data.synthetic.train;
  if (cfg.data.source === 'synthetic' && n > split)
    throw new UserError(
      `audit: --n ${n} is more than the ${split} training questions (data.synthetic.train); the audit takes the ` +
        `first n of them`,
    );
  const episodes = firstTrainEpisodes(cfg.data, n, 'audit');
  if (episodes.length < n)
    throw new UserError(
      `audit: --n ${n} is more than the ${episodes.length} training questions of ${cfg.data.path}; the audit takes ` +
        `the first n of them`,
    );
  const bare = episodes.find((e) => !e.decomposition || e.decomposition.length === 0);
  if (bare)
    throw new UserError(
      `audit: episode ${bare.id} has no gold decomposition, which the rule judge labels reports by; use data with ` +
        `decompositions (the synthetic world, MuSiQue)`,
    );
  return episodes;
}

function inBounds(flag: string, v: number, { min, max }: { min: number; max: number }): void {
  if (!Number.isInteger(v) || v < min || v > max)
    throw new UserError(`audit: ${flag} expects an integer in ${min}..${max}, got '${v}'`);
}

export interface AuditOptions {
  /** The parsed config (loadConfig); default: the schema's defaults. Its run.seed seeds everything. */
  config?: Config;
  /** Where the config came from, recorded in audit.json as setup.config (the CLI passes --config). */
  configFile?: string;
  /** Checkpoint folder; default model.path. */
  model?: string;
  /** Trajectories: one for each of the first n training questions (default 256). */
  n?: number;
  /** Bootstrap resamples of the trajectories (default 2000). */
  reps?: number;
  /** Output folder; default <run.dir>/audit/<checkpoint folder name>. */
  out?: string;
  /** Tensor backend; default: the SHARP_BACKEND environment variable, then run.backend. */
  backend?: BackendChoice;
}

export interface AuditResult {
  /** The output folder. */
  out: string;
  /** audit.json: per counterfactual the AUROC of -credit for wrong reports and the blamed shares. */
  report: AuditReport;
  /** audit.md: the report as tables. */
  markdown: string;
  files: { report: string; markdown: string; calls: string };
}

/** `sharp audit`: the config (--config, --set, --seed as run.seed), the audit, then the report. */
export async function run(opts: AuditFlags): Promise<void> {
  const cfg = configFrom({
    config: opts.config,
    set: [...opts.set, ...(opts.seed === undefined ? [] : [`run.seed=${opts.seed}`])],
  });
  const res = await audit({ ...opts, config: cfg, configFile: opts.config });
  process.stdout.write(`${res.markdown}\nwrote ${res.files.report}, ${res.files.markdown}, ${res.files.calls}\n`);
}

/** The audit as `sharp audit` runs it (the library's `audit`, src/index.ts). */
export async function audit(given: AuditOptions = {}): Promise<AuditResult> {
  const opts = { ...given, n: given.n ?? auditFlags.n.default, reps: given.reps ?? auditFlags.reps.default };
  // The CLI refuses these as it parses (src/recipes/commands.ts); a direct call gets the same bounds.
  inBounds('--n', opts.n, auditFlags.n);
  inBounds('--reps', opts.reps, auditFlags.reps);
  const cfg = opts.config === undefined ? loadConfig() : checkedConfig(opts.config);
  const r = cfg.rollout;
  if (r.agents !== 'multi')
    throw new UserError(
      `audit: rollout.agents is ${r.agents}; the audit scores worker reports, so it needs the multi-agent system ` +
        `(multi)`,
    );
  const model = resolveModelDir(opts.model, cfg, repoRoot);
  if (model.note) process.stderr.write(`sharp audit: ${model.note}\n`);
  const modelHash = checkpointHashOf(model.dir);
  // The questions first: data that cannot be audited is refused before the output folder is claimed.
  const episodes = auditEpisodes(cfg, opts.n);
  await startTools(cfg);
  const out = outDir(opts, cfg, model.dir);
  const seed = cfg.run.seed;
  const match = successFunction(cfg.credit.success, { f1Threshold: cfg.credit.f1Threshold });

  const { report, rows } = await withRun({ cfg, backendFlag: opts.backend, tensors: true }, async () => {
    const { model: lm, tokenizer } = await loadModel(model.dir);
    try {
      const rng = new Rng(seed);
      // Rollouts sample as RL does; replays draw common random numbers from one base shared by every arm.
      const policy = new LmPolicy(lm, tokenizer, {
        ...samplingAt(r.temperature, r),
        maxContext: r.maxContext,
        rng: rng.fork(),
      });
      const replayPolicy = new LmPolicy(lm, tokenizer, {
        ...samplingAt(cfg.credit.replayTemperature ?? r.temperature, r),
        maxContext: r.maxContext,
        rng: rng.fork(),
      });
      const streamSeed = rng.int(0, 0x7fffffff);
      checkGoldAnswerTokens(episodes, tokenizer, r.maxNewTokens, 'audit');
      // The likelihood arms score the recorded contexts with the same weights: no sampling, no stream.
      const scorer = stepScorer(lm, tokenizer, r, cfg.credit);
      const engine: EngineOptions = { cfg: r, agents: 'multi' };

      const t0 = performance.now();
      const trajs: Trajectory[] = [];
      const progress = createProgress({ total: episodes.length, done: 0, label: 'audit rollout' });
      try {
        for (let start = 0; start < episodes.length; start += BATCH) {
          const part = episodes.slice(start, start + BATCH);
          const { trajectories } = await runTrajectories(
            policy,
            part.map((episode) => ({ id: `${episode.id}/0`, episode, sample: 0 })),
            engine,
          );
          trajs.push(...trajectories);
          progress.tick(part.length);
        }
      } finally {
        progress.stop();
      }
      const rolloutSeconds = (performance.now() - t0) / 1000;
      const calls: WorkerCall[] = trajs.flatMap((t, i) =>
        labelWorkerCalls(t, episodes[i] as Episode, i, { hopMatchF1: cfg.credit.hopMatchF1, match }),
      );

      const arms: ArmReport[] = [];
      const creditsByArm: Record<string, number[]> = {};
      for (const arm of AUDIT_ARMS) {
        const armCfg = armConfig(cfg.credit, arm);
        const runner = engineReplayRunner(replayPolicy, engine, replaySettings(armCfg, streamSeed));
        const bar = createProgress({ total: trajs.length, done: 0, label: `audit credit ${arm.name}` });
        const credit = await armCredit(
          trajs,
          episodes,
          calls,
          armCfg,
          runner,
          BATCH,
          (k) => bar.tick(k),
          arm.value === 'likelihood' ? scorer : undefined,
        ).finally(() => bar.stop());
        creditsByArm[arm.name] = credit.credits;
        arms.push({
          ...arm,
          quality: creditQuality(calls, credit.credits, { reps: opts.reps, seed }),
          noise: credit.noise,
          replays: credit.replays,
          seconds: credit.seconds,
        });
      }
      const c = cfg.credit;
      const rows = calls.map((call, i) => ({
        ...call,
        credit: Object.fromEntries(AUDIT_ARMS.map((a) => [a.name, creditsByArm[a.name]?.[i]])),
      }));
      const result: AuditReport = {
        kind: AUDIT_KIND,
        version: 1,
        setup: {
          model: opts.model ?? (model.note ? model.dir : cfg.model.path),
          modelHash,
          config: opts.configFile ?? null,
          n: opts.n,
          seed,
          reps: opts.reps,
          temperature: r.temperature,
          replayTemperature: c.replayTemperature,
          replays: c.replays,
          replayMode: c.replayMode,
          success: c.success,
          hopMatchF1: c.hopMatchF1,
        },
        trajectories: trajs.length,
        successes: trajs.filter((t, i) => match(t.finalAnswer, (episodes[i] as Episode).answers) > 0).length,
        calls: callCounts(calls),
        rolloutSeconds,
        arms,
      };
      return { report: result, rows };
    } finally {
      lm.dispose();
    }
  });
  const md = auditMarkdown(report);
  // audit.json last: it marks the folder as an audit's (outDir).
  writeJsonlAtomic(join(out, FILES.calls), rows);
  writeFileAtomic(join(out, FILES.markdown), md);
  writeFileAtomic(join(out, FILES.report), `${JSON.stringify(report, null, 2)}\n`);
  const files = { report: join(out, FILES.report), markdown: join(out, FILES.markdown), calls: join(out, FILES.calls) };
  return { out, report, markdown: md, files };
}
