import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import type { Transcript } from '../../rollout/transcripts.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import {
  assertSameConfig,
  configHash,
  latestCheckpoint,
  readTrainerState,
} from '../../train/checkpoints/checkpoint.ts';
import { inProcessStages } from './step-stages.ts';
import { stagesFor } from '../../distributed/choose.ts';
import { runGrpo } from '../../train/grpo/loop.ts';
import { bf16BaseOf } from '../../train/optim/trainable.ts';
import { heldOutAccuracy, heldOutMetrics, testSamples, type AccuracyResult } from '../../eval/held-out-accuracy.ts';
import { finalSplit, heldOutSplits, loadTrainData } from './train-data.ts';
import { ensureTranscripts } from './expert-transcripts.ts';
import { ensureModel, tokenizerCorpus } from './ensure-model.ts';
import { companionFiles } from './save-model.ts';
import { sftStage } from './sft-on-transcripts.ts';
import { userOutcome } from '../../credit/reward-modules.ts';
import { checkGoldAnswerTokens } from '../../credit/likelihood-scorer.ts';
import { usesLikelihood } from './preflight.ts';
import { probeRewards, type NamedReward } from '../../credit/user-reward.ts';
import { accuracyLine, readSummary, SUMMARY_FILE, writeSummary, type TrainSummary } from '../../eval/train-summary.ts';

/**
 * The `sharp train` recipe. It only sequences the stages (no god
 * trainer); each lives in its own module:
 *   data (train + held-out from one world) -> expert transcripts (when SFT needs them and
 *   train.sft.data is missing) -> model (random init + fitted BPE when model.init.enabled and the
 *   folder is missing) -> SFT (train.sft.steps > 0; saved to <run>/sft-model) -> held-out accuracy
 *   -> GRPO (runGrpo: rollouts, credit, advantages, updates, checkpoints) -> held-out accuracy.
 * Resuming the same run folder skips what is done: the SFT model and the before-RL accuracy are
 * read back from the run folder, and runGrpo continues from the latest checkpoint.
 */
export const SFT_MODEL_DIR = 'sft-model';

export interface TrainPipelineOptions {
  cfg: Config;
  runDir: string;
  log: Logger;
  /** Set `requested` to stop after the current RL step (SIGINT). */
  stop: { requested: boolean };
  /** Progress bar / plain progress lines of the RL loop (default true). */
  progress?: boolean;
  /** Where the result line goes (default stdout). */
  print?: (line: string) => void;
  /** User rewards (credit/reward-modules.ts): the outcome reward in place of credit.success when any. */
  rewards?: readonly NamedReward[];
}

export interface TrainPipelineResult {
  summary: TrainSummary;
  step: number;
  stopped: boolean;
}

async function timed<T>(stages: Record<string, number>, name: string, f: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await f();
  } finally {
    stages[name] = (stages[name] ?? 0) + (performance.now() - t0) / 1000;
  }
}

async function accuracyOf(
  dir: string,
  tokenizer: Tokenizer,
  o: TrainPipelineOptions,
  episodes: Parameters<typeof heldOutAccuracy>[2],
): Promise<AccuracyResult> {
  const model = await CausalLM.load(dir);
  try {
    return await heldOutAccuracy(model, tokenizer, episodes, o.cfg, testSamples(o.cfg));
  } finally {
    model.dispose();
  }
}

/** Refuses (one line, exit 2) to resume a checkpoint written under another config. */
async function checkResumable(runDir: string, cfg: Config): Promise<void> {
  const latest = await latestCheckpoint(runDir);
  if (!latest) return;
  const state = await readTrainerState(latest.dir);
  assertSameConfig(latest.dir, state, configHash(cfg));
}

export async function trainPipeline(o: TrainPipelineOptions): Promise<TrainPipelineResult> {
  const { cfg, runDir, log } = o;
  const print = o.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const sftOn = cfg.train.sft.steps > 0;
  const prior = readSummary(runDir);
  const summary: TrainSummary = prior ?? { beforeLabel: sftOn ? 'SFT only' : 'before RL', stages: {}, info: {} };
  const stages = summary.stages;
  await checkResumable(runDir, cfg);

  const data = await timed(stages, 'data', async () => loadTrainData(cfg.data));
  // Validation for the curves during RL (and every choice made from them); test before and after RL only.
  const split = heldOutSplits(data.heldOut, cfg.eval.validationShare);
  log.info(
    { train: data.train.length, validation: split.validation.length, test: split.test.length, source: cfg.data.source },
    'data',
  );
  // The config rules check this for synthetic data; a benchmark file's size is known only now.
  if (cfg.train.steps > 0 && cfg.train.batchQuestions > data.train.length) {
    throw new UserError(
      `train.batchQuestions (${cfg.train.batchQuestions}) must be <= the ${data.train.length} training questions ` +
        `of ${cfg.data.path || cfg.data.source}: a step takes each question at most once`,
    );
  }

  const rewards = o.rewards ?? [];
  if (rewards.length > 0) {
    // Before SFT and the accuracy before RL: a reward that cannot score a trajectory stops the run
    // while its folder holds nothing but the setup files.
    probeRewards(rewards, data.train);
    log.info({ rewards: rewards.map((r) => ({ name: r.name, weight: r.weight })) }, 'user rewards');
  }

  const sftDir = join(runDir, SFT_MODEL_DIR);
  const sftDone = existsSync(join(sftDir, 'config.json'));
  let transcripts: Transcript[] = [];
  if (sftOn && !sftDone) {
    const file = resolve(cfg.train.sft.data);
    const got = await timed(stages, 'expert', () =>
      ensureTranscripts(file, data.train, { ...cfg, expert: cfg.train.sft.expert }),
    );
    transcripts = got.transcripts;
    if (got.generated) {
      summary.info.expertSolved = `${got.generated.solved}/${got.generated.episodes}`;
      log.info(
        { solved: got.generated.solved, episodes: got.generated.episodes, transcripts: transcripts.length, file },
        'expert transcripts written',
      );
    } else log.info({ transcripts: transcripts.length, file }, 'expert transcripts read');
    if (got.stale)
      log.warn(
        { file },
        'these transcripts were written under other role prompts (rollout.plannerPrompt / workerPrompt): delete the ' +
          'file to regenerate them',
      );
  }

  const init = await timed(stages, 'init', () =>
    ensureModel(cfg.model, cfg.run.seed, () => tokenizerCorpus(data.train, transcripts)),
  );
  if (init.created) {
    Object.assign(summary.info, { parameters: init.parameters ?? 0, vocab: init.vocab ?? 0 });
    log.info(
      { dir: init.dir, parameters: init.parameters, vocab: init.vocab, corpusTokens: init.corpusTokens },
      'created a random-init model with a fitted tokenizer',
    );
  }
  const tokenizer = await Tokenizer.load(init.dir);
  // The gold answers the likelihood value forces, against the tokenizer the run trains with: refused
  // here, before the evaluation and the first step, rather than at the step that samples one.
  if (usesLikelihood(cfg.credit))
    checkGoldAnswerTokens(
      data.train,
      tokenizer,
      cfg.rollout.maxNewTokens,
      `train: ${cfg.data.source === 'synthetic' ? 'the synthetic world' : `data.path ${cfg.data.path}`}`,
    );

  if (sftOn && !sftDone) {
    const res = await timed(stages, 'sft', () =>
      sftStage({
        cfg,
        fromDir: init.dir,
        toDir: sftDir,
        runDir,
        tokenizer,
        transcripts,
        onResume: (step, dir) => log.info({ step, dir }, 'resuming SFT from its latest checkpoint'),
        onStep: (step, s) => {
          if (step === 1 || step % 25 === 0 || step === cfg.train.sft.steps)
            log.info({ step, loss: Number(s['sft/loss']?.toFixed(4)) }, 'sft');
        },
      }),
    );
    Object.assign(summary.info, {
      sftFirstLoss: res.firstLoss,
      sftLastLoss: res.lastLoss,
      sftSequences: res.sequences,
    });
    log.info(
      {
        steps: res.steps,
        sequences: res.sequences,
        dropped: res.dropped,
        firstLoss: res.firstLoss,
        lastLoss: res.lastLoss,
        seconds: res.seconds,
      },
      'sft done',
    );
    writeSummary(runDir, summary);
  }
  const startDir = sftOn ? sftDir : init.dir;

  // Per-question counts stay in summary.json (they pair ablation arms); the log line leaves them out.
  if (summary.heldOutBefore) {
    log.info(
      { ...summary.heldOutBefore, questions: undefined },
      `held-out accuracy (${summary.beforeLabel}) read from ${SUMMARY_FILE}`,
    );
  } else {
    summary.heldOutBefore = await timed(stages, 'eval_before', () =>
      accuracyOf(startDir, tokenizer, o, finalSplit(split, cfg.eval.finalSplit)),
    );
    writeSummary(runDir, summary);
    log.info({ ...summary.heldOutBefore, questions: undefined }, `held-out accuracy (${summary.beforeLabel})`);
  }

  // rollout.distributed set: the rollout and replay stages served by workers (or their in-process reference).
  const stepStages = stagesFor(cfg, {
    tokenizer,
    runDir,
    companions: companionFiles(init.dir),
    inProcess: () => inProcessStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit }),
  });
  const grpo = await timed(stages, 'rl', () =>
    runGrpo({
      runDir,
      train: cfg.train,
      seed: cfg.run.seed,
      fullConfig: cfg,
      initialModel: () => CausalLM.load(startDir, { bf16Base: bf16BaseOf(cfg.train) }),
      data: data.train,
      stages: stepStages,
      credit: cfg.credit,
      outcome: userOutcome(rewards),
      enc: tokenizer,
      padId: tokenizer.padId,
      maxTokens: cfg.rollout.maxContext,
      checkpointFiles: companionFiles(init.dir),
      stop: o.stop,
      progress: o.progress,
      onStep: (step, m) => log.debug({ step, reward: m['reward/planner'], accuracy: m.accuracy }, 'rl step'),
      evaluate: async (model, step) => {
        if (split.validation.length === 0) return {};
        const r = await heldOutAccuracy(model, tokenizer, split.validation, cfg);
        log.info({ step, accuracy: r.accuracy, interval: r.interval, n: r.total }, 'validation accuracy');
        return heldOutMetrics(r);
      },
      evaluateEvery: cfg.eval.heldOutEvery,
    }).finally(() => stepStages.close()),
  );
  Object.assign(summary, {
    rlSteps: grpo.step,
    resumedFrom: grpo.resumedFrom ?? summary.resumedFrom,
    stopped: grpo.stopped,
  });
  try {
    if (grpo.stopped) {
      writeSummary(runDir, summary);
      log.warn({ step: grpo.step }, 'stopped: checkpoint saved; continue with --resume');
      return { summary, step: grpo.step, stopped: true };
    }
    summary.heldOutAfterRl = await timed(stages, 'eval_after', () =>
      heldOutAccuracy(grpo.model, tokenizer, finalSplit(split, cfg.eval.finalSplit), cfg, testSamples(cfg)),
    );
  } finally {
    grpo.model.dispose();
  }
  writeSummary(runDir, summary);
  log.info({ ...summary.heldOutAfterRl, questions: undefined }, 'held-out accuracy (after RL)');
  print(accuracyLine(summary));
  return { summary, step: grpo.step, stopped: false };
}
