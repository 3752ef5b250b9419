import type { Config } from '../../config/schema.ts';
import { engineReplayRunner, replaySettings } from '../../credit/engine-adapters.ts';
import { judgeOptions } from '../../credit/judge-options.ts';
import { lmCandidateScorer } from '../../credit/judges/lm-scorer.ts';
import { scorePlans, stepScorer } from '../../credit/likelihood-scorer.ts';
import type { CausalLM } from '../../model/causal-lm.ts';
import { Rng } from '../../random/rng.ts';
import { rollout, type EngineOptions } from '../../rollout/engine.ts';
import { LmPolicy, samplingAt } from '../../rollout/lm-policy.ts';
import { getProtocol } from '../../rollout/protocol/index.ts';
import { configCatalog } from '../../rollout/protocol/tool-catalog.ts';
import type { Tokenizer } from '../../tokenizer/tokenizer.ts';
import type { StepRun, StepSeeds, StepStages } from '../../train/grpo/types.ts';

/**
 * The generating stages of `sharp train` in this process: the LM as the policy of every agent ->
 * the multi-agent rollout engine (B questions x G trajectories, one batched generate per decoding
 * step), and the step's counterfactual replays, every group's, as one batched engine run through the
 * same policy.
 * The step seed is the base of the credit stream: the replays' common random numbers and the
 * judge's resampler draw from it, never from the rollouts' stream.
 */
export interface InProcessSetup {
  tokenizer: Tokenizer;
  rollout: Config['rollout'];
  credit: Config['credit'];
  /** Worker tools per episode (default: the engine's, over the episode's paragraphs). */
  tools?: EngineOptions['tools'];
}

export function inProcessStages(setup: InProcessSetup): StepStages {
  const r = setup.rollout;
  const c = setup.credit;
  const engine: EngineOptions = { cfg: r, tools: setup.tools, agents: r.agents };
  const begin = async (model: CausalLM, seeds: StepSeeds): Promise<StepRun> => {
    const creditRng = new Rng(seeds.stepSeed);
    const policy = new LmPolicy(model, setup.tokenizer, {
      ...samplingAt(r.temperature, r),
      maxContext: r.maxContext,
      rng: seeds.rng,
    });
    const replayPolicy = new LmPolicy(model, setup.tokenizer, {
      ...samplingAt(c.replayTemperature ?? r.temperature, r),
      maxContext: r.maxContext,
      rng: creditRng.fork(),
    });
    const judgePolicy = new LmPolicy(model, setup.tokenizer, {
      ...samplingAt(r.temperature, r),
      maxContext: r.maxContext,
      rng: creditRng.fork(),
    });
    const replays = engineReplayRunner(replayPolicy, engine, replaySettings(c, seeds.stepSeed));
    return {
      rollout: async (episodes) => {
        const run = await rollout(policy, [...episodes], engine);
        const groups = episodes.map((episode) => ({
          episode,
          trajectories: run.trajectories.filter((t) => t.episodeId === episode.id),
        }));
        return { groups, policyCalls: run.stats.steps, maxBatch: run.stats.maxBatch };
      },
      // One engine run for every group's replays: they decode side by side, a step of the planner's
      // answer for all of them at once. Each replay samples from its own stream (keyed by trajectory and
      // replica), so the batch it shares changes its numbers only by float rounding.
      runReplays: async (plans) => {
        const items = plans.flatMap((p) => p.items);
        const all = items.length > 0 ? await replays(items) : [];
        let at = 0;
        return plans.map((p) => all.slice(at, (at += p.items.length)));
      },
      scoreLikelihoods: (plans) => scorePlans(plans, stepScorer(model, setup.tokenizer, r, c)),
      assignOptions: judgeOptions(
        c,
        judgePolicy,
        getProtocol(r.protocol, configCatalog(r)),
        r.maxNewTokens,
        c.judge === 'llm' ? lmCandidateScorer(model, setup.tokenizer, r.maxContext) : undefined,
      ),
    };
  };
  return { begin, close: () => Promise.resolve() };
}
