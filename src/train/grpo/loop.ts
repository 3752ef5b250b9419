import { join } from 'node:path';
import type { z } from 'zod';
import type { trainSection } from '../../config/sections/train.ts';
import { writeStepRecord } from '../../credit/record.ts';
import type { CausalLM } from '../../model/causal-lm.ts';
import { Rng } from '../../random/rng.ts';
import { GradientAccumulator } from '../optim/accumulate.ts';
import {
  assertSameConfig,
  configHash,
  latestCheckpoint,
  loadCheckpointModel,
  loadOptimizerState,
  readTrainerState,
  saveCheckpoint,
  type TrainerState,
} from '../checkpoints/checkpoint.ts';
import { prepareForTraining, trainingSetup } from '../optim/trainable.ts';
import { JsonlMetrics, type MetricRecord } from '../metrics/jsonl.ts';
import { Progress } from '../../run/progress.ts';
import { TensorBoardWriter } from '../metrics/tensorboard.ts';
import { buildRlBatch, rewardMetrics } from './advantages.ts';
import type { StepStages } from './types.ts';
import type { CreditConfig } from '../../credit/config.ts';
import type { Episode } from '../../data/episode.ts';
import { planStep } from '../../credit/plan.ts';
import { assignStep } from '../../credit/assign.ts';
import { answerAccuracy, type OutcomeFn } from '../../credit/outcome.ts';
import { stepReport } from './step-report.ts';
import { createAdamW, learningRateAt, optimizerSettings } from '../optim/optimizer.ts';
import { pairSequences, type ChatEncoder } from '../batches/sequences.ts';
import { grpoUpdate } from './update.ts';
import { assertFiniteWeights, atStep } from '../optim/diverged.ts';

/**
 * The GRPO training loop: it only sequences the stages, by name (types.ts says what each hands on):
 *   questions (data cursor) -> rollout -> plan replays -> run replays -> score likelihoods -> assign credit ->
 *   advantages and sequences (advantages.ts buildRlBatch) -> lr = learningRateAt(step) -> update
 *   (update.ts: loss, accumulate, clip, AdamW at that lr) -> metrics (metrics.jsonl, TensorBoard,
 *   progress) -> checkpoint every N steps.
 * Resume: the latest complete checkpoint of the run folder gives the weights, AdamW state, step,
 * data cursor and RNG state, so 2 steps + resume + 2 steps equals 4 steps straight. A stop request
 * (Ctrl-C: `stop.requested`) finishes the current step, saves, and returns normally.
 */
type TrainConfig = z.infer<typeof trainSection>;

export interface GrpoRunOptions {
  runDir: string;
  train: TrainConfig;
  /** Seed of the run's RNG (run.seed). */
  seed: number;
  /** The whole config, hashed into trainer_state.json: resuming under a different config is refused. */
  fullConfig: unknown;
  /** The model to start from when there is no checkpoint to resume. */
  initialModel: () => Promise<CausalLM>;
  /** Training questions, consumed in a seeded order, `train.batchQuestions` per step. */
  data: readonly Episode[];
  /** The generating stages (rollout, run replays): in this process or on `sharp worker` processes. */
  stages: StepStages;
  /** How credit is assigned (plan replays, assign credit). */
  credit: CreditConfig;
  /** The user's outcome reward (credit/user-reward.ts); default the accuracy of credit.success. */
  outcome?: OutcomeFn;
  enc: ChatEncoder;
  padId: number;
  /** Context limit: longer training sequences are dropped (rollout.maxContext). */
  maxTokens?: number;
  /** Resume from the run's latest checkpoint when there is one (default true). */
  resume?: boolean;
  /** Allow resuming a checkpoint written under another config hash. */
  forceResume?: boolean;
  /** Files copied into every checkpoint (tokenizer.json, tokenizer_config.json, ...), so it loads alone. */
  checkpointFiles?: string[];
  /** Set `requested` to stop after the current step (SIGINT handler). */
  stop?: { requested: boolean };
  /** Progress output (default stderr; a bar on a TTY). */
  progress?: boolean;
  /** Called after every step with its metrics (tests, logging). */
  onStep?: (step: number, metrics: MetricRecord) => void;
  /**
   * Extra measurements of the current policy (held-out accuracy) merged into the step's metrics,
   * after the update of every `evaluateEvery`-th step but the last (the caller measures the final
   * policy itself). It must not draw from the training RNG, so measuring never changes training.
   */
  evaluate?: (model: CausalLM, step: number) => Promise<MetricRecord>;
  evaluateEvery?: number;
}

export interface GrpoRunResult {
  model: CausalLM;
  step: number;
  resumedFrom?: number;
  stopped: boolean;
}

/**
 * The data order: epoch e is a permutation drawn from Rng(seed + e), so the cursor alone (saved in
 * the checkpoint) says which questions come next; no data RNG state is needed.
 */
export function batchAt<T>(data: readonly T[], cursor: number, size: number, seed: number): T[] {
  if (data.length === 0) throw new Error('training data is empty');
  const out: T[] = [];
  let perm: number[] | undefined;
  let permEpoch = -1;
  for (let k = cursor; k < cursor + size; k++) {
    const epoch = Math.floor(k / data.length);
    if (epoch !== permEpoch) {
      perm = new Rng((seed + 1000003 * (epoch + 1)) | 0).shuffle(data.map((_, i) => i));
      permEpoch = epoch;
    }
    out.push(data[(perm as number[])[k % data.length] as number] as T);
  }
  return out;
}

export async function runGrpo(o: GrpoRunOptions): Promise<GrpoRunResult> {
  const cfg = o.train;
  const hash = configHash(o.fullConfig);
  const latest = o.resume === false ? undefined : await latestCheckpoint(o.runDir);
  let state: TrainerState;
  let model: CausalLM;
  const settings = optimizerSettings(cfg, 'grpo');
  const optimizer = createAdamW(settings);
  if (latest) {
    state = await readTrainerState(latest.dir);
    if (!o.forceResume) assertSameConfig(latest.dir, state, hash);
    // a LoRA checkpoint: the initial model + its adapters
    model = await loadCheckpointModel(latest.dir, o.initialModel);
    try {
      await loadOptimizerState(latest.dir, model, optimizer);
    } catch (err) {
      model.dispose();
      throw err;
    }
  } else {
    model = await o.initialModel();
    state = { step: 0, dataCursor: 0, rng: new Rng(o.seed).state(), configHash: hash };
  }
  prepareForTraining(model, trainingSetup(cfg), o.seed); // train.lora: fresh adapters unless resumed ones are attached
  // beta > 0: a frozen copy of the starting policy (never of a resumed one: the reference must not move);
  // with LoRA the base with adapters disabled, which is that policy, without a copy.
  const ref = cfg.klBeta > 0 ? (model.lora ? model.baseView() : await o.initialModel()) : undefined;
  const rng = Rng.fromState(state.rng);
  const accumulator = new GradientAccumulator(model.trainableVariables());
  const metrics = new JsonlMetrics(join(o.runDir, 'metrics.jsonl'), { resumeStep: state.step });
  const tb = cfg.tensorboard ? new TensorBoardWriter(join(o.runDir, 'tb')) : undefined;
  const progress = o.progress === false ? undefined : new Progress({ total: cfg.steps, startStep: state.step });
  const resumedFrom = latest ? state.step : undefined;

  const save = async (): Promise<void> => {
    state.rng = rng.state();
    state.configHash = hash;
    assertFiniteWeights(state.step, 'train: RL', model.trainableVariables());
    await saveCheckpoint(o.runDir, {
      model,
      optimizer,
      state,
      keep: cfg.keepCheckpoints,
      copyFiles: o.checkpointFiles,
    });
    tb?.flush();
  };

  let stopped = false;
  let ok = false;
  try {
    while (state.step < cfg.steps) {
      const t0 = performance.now();
      const items = batchAt(o.data, state.dataCursor, cfg.batchQuestions, o.seed);
      // The credit stream's seed, drawn before the rollout samples: the rollouts sample the same in
      // every arm of an ablation until the updates differ (docs/architecture.md, "Credit").
      const stepSeed = rng.int(0, 0x7fffffff);
      const run = await o.stages.begin(model, { step: state.step + 1, stepSeed, rng });
      const rolled = await run.rollout(items);
      const t1 = performance.now();
      const plans = planStep(rolled.groups, o.credit, stepSeed);
      const replayed = await run.runReplays(plans);
      const scored = await run.scoreLikelihoods(plans);
      const assign = o.outcome ? { ...run.assignOptions, outcome: o.outcome } : run.assignOptions;
      const credited = await assignStep(plans, replayed, scored, o.credit, assign);
      const tc = performance.now();
      const collected = stepReport(
        o.credit,
        rolled,
        plans,
        replayed,
        credited,
        { generateS: (t1 - t0) / 1000, creditS: (tc - t1) / 1000 },
        o.outcome,
      );
      const batch = buildRlBatch(collected.groups, o.enc, cfg.advEps, o.maxTokens, cfg.scaleRewards);
      const pairs = cfg.dpoWeight > 0 ? collected.pairs.map((p) => pairSequences(p, o.enc)) : [];
      const lr = learningRateAt(state.step, settings);
      const record: MetricRecord = {
        ...rewardMetrics(collected.groups, batch.advantages),
        ...collected.metrics,
        'train/lr': lr,
        'batch/dropped': batch.dropped,
      };
      if (o.outcome) record.accuracy = answerAccuracy(rolled.groups, o.credit);
      if (batch.sequences.length > 0) {
        const update = atStep(state.step + 1, 'train: RL', () =>
          grpoUpdate(
            {
              model,
              optimizer,
              accumulator,
              ref,
              lr,
              padId: o.padId,
              dpo: pairs.length > 0 ? { pairs, weight: cfg.dpoWeight, beta: cfg.dpoBeta } : undefined,
            },
            batch.sequences,
            cfg,
          ),
        );
        Object.assign(record, update);
      }
      const t2 = performance.now();
      const tokens = typeof record['batch/tokens'] === 'number' ? record['batch/tokens'] : 0;
      // perf/rollout_s: the rollout and credit stages together (perf/generate_s + perf/credit_s).
      Object.assign(record, {
        'perf/rollout_s': (tc - t0) / 1000,
        'perf/update_s': (t2 - tc) / 1000,
        'perf/train_tok_s': tokens / Math.max(1e-9, (t2 - tc) / 1000),
      });
      state.step += 1;
      state.dataCursor += items.length;
      const every = o.evaluateEvery ?? 0;
      if (o.evaluate && every > 0 && state.step % every === 0 && state.step < cfg.steps)
        Object.assign(record, await o.evaluate(model, state.step));
      metrics.write(state.step, record);
      if (collected.record) writeStepRecord(o.runDir, { ...collected.record, step: state.step });
      tb?.scalars(
        state.step,
        Object.fromEntries(Object.entries(record).filter((e): e is [string, number] => typeof e[1] === 'number')),
      );
      progress?.update(state.step, {
        reward: record['reward/planner'] as number,
        accuracy: record.accuracy as number,
        tokensPerSec: record['perf/train_tok_s'] as number,
      });
      o.onStep?.(state.step, record);
      if (o.stop?.requested) {
        stopped = true;
        break;
      }
      if (state.step % cfg.checkpointEvery === 0 && state.step < cfg.steps) await save();
    }
    await save();
    ok = true;
  } finally {
    if (!ok) model.dispose(); // on success the caller owns the model
    progress?.stop();
    tb?.close();
    accumulator.dispose();
    optimizer.dispose();
    ref?.dispose();
  }
  return { model, step: state.step, resumedFrom, stopped };
}
