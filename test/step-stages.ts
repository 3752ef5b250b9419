import type { CreditConfig } from '../src/credit/config.ts';
import { planStep } from '../src/credit/plan.ts';
import { assignStep } from '../src/credit/assign.ts';
import type { Episode } from '../src/data/episode.ts';
import type { CausalLM } from '../src/model/causal-lm.ts';
import type { Rng } from '../src/random/rng.ts';
import { stepReport, type StepOutput } from '../src/train/grpo/step-report.ts';
import type { StepStages } from '../src/train/grpo/types.ts';

/**
 * The stages of one RL step before advantages, as train/grpo/loop.ts runs them (its first draw from `rng` is the step
 * seed), timed as it times them (perf/generate_s from the step's start, perf/credit_s the replays and credit).
 */
export async function runStepStages(
  stages: StepStages,
  credit: CreditConfig,
  episodes: readonly Episode[],
  model: CausalLM,
  rng: Rng,
  step = 1,
): Promise<StepOutput> {
  const t0 = performance.now();
  const stepSeed = rng.int(0, 0x7fffffff);
  const run = await stages.begin(model, { step, stepSeed, rng });
  const rolled = await run.rollout(episodes);
  const t1 = performance.now();
  const plans = planStep(rolled.groups, credit, stepSeed);
  const replayed = await run.runReplays(plans);
  const scored = await run.scoreLikelihoods(plans);
  const credited = await assignStep(plans, replayed, scored, credit, run.assignOptions);
  const tc = performance.now();
  return stepReport(credit, rolled, plans, replayed, credited, {
    generateS: (t1 - t0) / 1000,
    creditS: (tc - t1) / 1000,
  });
}
