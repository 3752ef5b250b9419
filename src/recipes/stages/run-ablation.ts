import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { stringify } from 'yaml';
import type { Config } from '../../config/schema.ts';
import { checkRules } from '../../config/rules.ts';
import { ablationSection, type AblationMethod } from '../../config/sections/ablation.ts';
import { UserError } from '../../errors.ts';
import { writeFileAtomic } from '../../fs/atomic.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { renderPng } from '../../train/metrics/plot.ts';
import { heldOutAccuracy, testSamples, type AccuracyResult } from '../../eval/held-out-accuracy.ts';
import {
  ablationMarkdown,
  ablationPlotSpec,
  pairwise,
  plantedPairs,
  readRun,
  resolvedLine,
  shapePairs,
  summarise,
  type MethodSummary,
  type PairRow,
  type RunOutcome,
} from '../../report/ablation.ts';
import { finalSplit, heldOutSplits, loadTrainData } from './train-data.ts';
import { checkTrainDecompositions } from './preflight.ts';
import { readSummary, writeSummary } from '../../eval/train-summary.ts';
import { trainPipeline } from './train-pipeline.ts';
import { userRewards } from '../../credit/reward-modules.ts';

/**
 * `sharp ablate --config X`: the SHARP ablation. For every seed and method (ablation.*), one
 * `sharp train` run (src/recipes/stages/train-pipeline.ts) in `<dir>/<method>-s<seed>/`, all from the same
 * starting checkpoint (model.path, no SFT stage) with the same RL budget, data and held-out set;
 * then ablation.json, ablation.md and ablation.png in `<dir>`. Seeds run in the outer loop, so a
 * partial ablation already compares every method. A finished run is skipped, an unfinished one
 * resumes from its latest checkpoint; the before-RL accuracy is measured once per agent system and
 * shared (same checkpoint, same held-out draws).
 */
export interface AblateOptions {
  cfg: Config;
  dir: string;
  log: Logger;
  stop: { requested: boolean };
  command: string;
  print?: (line: string) => void;
  /** Write the report from the runs already finished; train nothing. */
  reportOnly?: boolean;
}

export interface AblateResult {
  summaries: MethodSummary[];
  pairs: PairRow[];
  runs: RunOutcome[];
  complete: boolean;
}

/**
 * The config of one run: the base config with the method and the seed applied. Its ablation
 * section names that one arm and seed, nothing of the command that runs it (the other arms and
 * seeds, the folder, the bootstrap), so a run resumes under another split of the same ablation
 * across processes.
 */
export function methodConfig(base: Config, method: AblationMethod, seed: number): Config {
  const cfg = structuredClone(base);
  cfg.run.seed = seed;
  cfg.run.name = `${base.run.name}-${method}-s${seed}`;
  cfg.ablation = ablationSection.parse({ methods: [method], seeds: [seed] });
  // Only the likelihood arms value coalitions by the gold answer's likelihood; the base config's scale stays.
  cfg.credit.value = 'outcome';
  if (method === 'single') {
    cfg.rollout.agents = 'single';
    cfg.credit.method = 'broadcast'; // one agent: its reward is the accuracy
  } else if (method === 'loo-resample' || method === 'loo-repair' || method === 'loo-repair-workers') {
    cfg.rollout.agents = 'multi';
    cfg.credit.method = 'loo';
    cfg.credit.counterfactual = method === 'loo-resample' ? 'resample' : 'repair';
    if (method === 'loo-repair-workers') cfg.credit.repairPlanner = false;
  } else if (method === 'loo-likelihood' || method === 'shapley-likelihood' || method === 'loo-likelihood-seq') {
    cfg.rollout.agents = 'multi';
    cfg.credit.method = method === 'shapley-likelihood' ? 'shapley' : 'loo';
    cfg.credit.counterfactual = 'mask';
    cfg.credit.value = 'likelihood';
    cfg.credit.likelihood.form = method === 'loo-likelihood-seq' ? 'sequential' : 'coalition';
  } else {
    cfg.rollout.agents = 'multi';
    cfg.credit.method = method;
  }
  return cfg;
}

/** The base config's one-line problems (exit 2), checked before anything runs. */
export function checkAblationConfig(cfg: Config): void {
  if (cfg.train.sft.steps > 0)
    throw new UserError(
      'ablation: train.sft.steps must be 0: every method starts from the same checkpoint (model.path), e.g. ' +
        'models/sharp-tiny-sft',
    );
  if (cfg.model.init.enabled && !existsSync(join(cfg.model.path, 'config.json'))) {
    throw new UserError(
      `ablation: model.path ${cfg.model.path} does not exist; the ablation compares methods from one existing ` +
        `checkpoint (model.init.enabled would create a random one)`,
    );
  }
  if (cfg.train.steps < 1) throw new UserError('ablation: train.steps must be >= 1 (the RL budget of every run)');
  // Each arm changes the credit settings: its config must pass the rules and suit the data before any run starts.
  for (const method of cfg.ablation.methods) {
    const arm = methodConfig(cfg, method, cfg.ablation.seeds[0] ?? 0);
    const problem = checkRules(arm)[0];
    if (problem !== undefined) throw new UserError(`ablation: arm ${method}: ${problem}`);
    checkTrainDecompositions(arm, `ablation: arm ${method}`);
  }
}

/**
 * Before-RL accuracy of the starting checkpoint under one agent system, measured once and kept in
 * `<dir>/before-<agents>.json`.
 */
async function beforeAccuracy(
  cfg: Config,
  dir: string,
  cache: Map<string, AccuracyResult>,
  log: Logger,
): Promise<AccuracyResult> {
  // A validation sweep (eval.finalSplit validation) keeps its before-RL accuracy apart from the test split's.
  const key = cfg.eval.finalSplit === 'test' ? cfg.rollout.agents : `${cfg.rollout.agents}-${cfg.eval.finalSplit}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const file = join(dir, `before-${key}.json`);
  let acc: AccuracyResult;
  if (existsSync(file)) {
    acc = JSON.parse(readFileSync(file, 'utf8')) as AccuracyResult;
  } else {
    const data = loadTrainData(cfg.data);
    const tokenizer = await Tokenizer.load(cfg.model.path);
    const model = await CausalLM.load(cfg.model.path);
    try {
      acc = await heldOutAccuracy(
        model,
        tokenizer,
        finalSplit(heldOutSplits(data.heldOut, cfg.eval.validationShare), cfg.eval.finalSplit),
        cfg,
        testSamples(cfg),
      );
    } finally {
      model.dispose();
    }
    writeFileAtomic(file, `${JSON.stringify(acc, null, 2)}\n`);
    log.info(
      { agents: key, accuracy: acc.accuracy, interval: acc.interval, n: acc.total },
      'held-out accuracy of the starting checkpoint',
    );
  }
  cache.set(key, acc);
  return acc;
}

export async function ablate(o: AblateOptions): Promise<AblateResult> {
  const { cfg, dir, log } = o;
  const print = o.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  checkAblationConfig(cfg);
  // The arms differ only in the credit term: every arm decomposes the same outcome reward.
  const rewards = await userRewards(cfg.credit);
  mkdirSync(dir, { recursive: true });
  const { methods, seeds } = cfg.ablation;
  const before = new Map<string, AccuracyResult>();
  let complete = true;
  outer: for (const seed of o.reportOnly ? [] : seeds) {
    for (const method of methods) {
      const runCfg = methodConfig(cfg, method, seed);
      const runDir = join(dir, `${method}-s${seed}`);
      if (readRun(runDir, method, seed)) {
        log.info({ method, seed }, 'finished earlier: skipped');
        continue;
      }
      mkdirSync(runDir, { recursive: true });
      if (!existsSync(join(runDir, 'config.yaml'))) writeFileAtomic(join(runDir, 'config.yaml'), stringify(runCfg));
      if (!readSummary(runDir)) {
        writeSummary(runDir, {
          beforeLabel: 'before RL',
          heldOutBefore: await beforeAccuracy(runCfg, dir, before, log),
          stages: {},
          info: {},
        });
      }
      const t0 = performance.now();
      print(`ablation: ${method} seed ${seed} (${runDir})`);
      const res = await trainPipeline({
        cfg: runCfg,
        runDir,
        log: log.child({ method, seed }),
        stop: o.stop,
        progress: false,
        rewards,
        print: () => {},
      });
      const s = res.summary;
      print(
        `ablation: ${method} seed ${seed}: held-out ${s.heldOutBefore?.accuracy.toFixed(3)} -> ` +
          `${s.heldOutAfterRl?.accuracy.toFixed(3) ?? 'n/a'} (n = ${s.heldOutAfterRl?.total ?? 0}) in ` +
          `${((performance.now() - t0) / 1000).toFixed(0)} s`,
      );
      if (res.stopped) {
        complete = false;
        break outer;
      }
    }
  }
  const runs: RunOutcome[] = [];
  for (const seed of seeds)
    for (const method of methods) {
      const r = readRun(join(dir, `${method}-s${seed}`), method, seed);
      if (r) runs.push(r);
      else complete = false;
    }
  const summaries = methods
    .map((m) =>
      summarise(
        m,
        runs.filter((r) => r.method === m),
      ),
    )
    .filter((s) => s.seeds.length > 0);
  const bootstrap = { reps: cfg.ablation.bootstrap, seed: 0 };
  const pairs = pairwise(methods, runs, bootstrap);
  const context = {
    command: o.command,
    machine: `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
    date: new Date().toISOString().slice(0, 10),
  };
  const world = {
    shapePairs: shapePairs(methods, runs, bootstrap),
    plantedPairs: plantedPairs(methods, runs, bootstrap),
  };
  const extra = world.shapePairs.length > 0 || world.plantedPairs.length > 0 ? world : {};
  writeFileAtomic(
    join(dir, 'ablation.json'),
    `${JSON.stringify({ context, complete, summaries, pairs, ...extra, runs }, null, 2)}\n`,
  );
  writeFileAtomic(join(dir, 'ablation.md'), ablationMarkdown(summaries, runs, context, pairs, world));
  if (runs.length > 0) writeFileAtomic(join(dir, 'ablation.png'), await renderPng(ablationPlotSpec(runs)));
  for (const s of summaries)
    print(
      `ablation: ${s.label}: ${s.mean.toFixed(3)} ± ${s.std.toFixed(3)} over ${s.seeds.length} seed(s) (before RL ` +
        `${s.before.toFixed(3)}; ${Math.round(s.wallSeconds)} s per run)`,
    );
  for (const p of pairs) {
    const d = p.diff;
    print(
      `ablation: ${p.a} - ${p.b}: ${d.mean >= 0 ? '+' : ''}${d.mean.toFixed(3)} [${d.low.toFixed(3)}, ` +
        `${d.high.toFixed(3)}], MDE ${d.mde.toFixed(3)} (${d.seeds} seeds x ${d.questions} ` +
        `questions)${d.resolved ? '' : ', not resolved'}`,
    );
  }
  if (pairs.length > 0) print(`ablation: ${resolvedLine(pairs)}`);
  print(`ablation: ${complete ? 'complete' : 'partial'}; ${join(dir, 'ablation.md')}`);
  return { summaries, pairs, runs, complete };
}
