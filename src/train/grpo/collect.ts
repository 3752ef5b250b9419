import type { Config } from '../../config/schema.ts';
import { computeCredits } from '../../credit/compute.ts';
import { engineReplayRunner } from '../../credit/engine-adapters.ts';
import { judgeOptions } from '../../credit/judge-options.ts';
import { lmCandidateScorer } from '../../credit/judges/lm-scorer.ts';
import { getProtocol } from '../../rollout/protocol/index.ts';
import { groupRecord, ReplayRecorder, type GroupRecord } from '../../credit/record.ts';
import type { PreferencePair } from '../../credit/first-error.ts';
import type { Episode } from '../../data/episode.ts';
import { LmPolicy, samplingAt } from '../../rollout/lm-policy.ts';
import type { CausalLM } from '../../model/causal-lm.ts';
import { Rng } from '../../random/rng.ts';
import { rollout, type EngineOptions } from '../../rollout/engine.ts';
import type { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { collectMetrics, trainRecord } from './collect-output.ts';
import type { Collected } from './loop.ts';
import type { CreditedGroup } from './types.ts';

/**
 * The collect stage of `sharp train` with the real parts: the LM as the policy
 * of every agent -> the multi-agent rollout engine (B questions x G trajectories, one batched
 * generate per decoding step) -> the credit module per group (counterfactual replays through the
 * same policy) -> groups of trajectories with per-agent rewards, failure pairs, and the credit
 * report and rollout stats as metrics.
 */
export interface CollectSetup {
  tokenizer: Tokenizer;
  rollout: Config['rollout'];
  credit: Config['credit'];
  /** Worker tools per episode (default: the engine's, over the episode's paragraphs). */
  tools?: EngineOptions['tools'];
}

export function makeCollect(setup: CollectSetup): (episodes: Episode[], model: CausalLM, rng: Rng) => Promise<Collected> {
  const r = setup.rollout;
  return async (episodes, model, rng) => {
    // The credit stage's own stream, one draw per step whatever the method: the rollouts sample the
    // same in every arm of an ablation until the updates differ (docs/architecture.md, "Credit").
    const creditSeed = rng.int(0, 0x7fffffff);
    const creditRng = new Rng(creditSeed);
    const c = setup.credit;
    const policy = new LmPolicy(model, setup.tokenizer, { ...samplingAt(r.temperature, r), maxContext: r.maxContext, rng });
    const replayPolicy = new LmPolicy(model, setup.tokenizer, { ...samplingAt(c.replayTemperature ?? r.temperature, r), maxContext: r.maxContext, rng: creditRng.fork() });
    const judgePolicy = new LmPolicy(model, setup.tokenizer, { ...samplingAt(r.temperature, r), maxContext: r.maxContext, rng: creditRng.fork() });
    const engine: EngineOptions = { cfg: r, tools: setup.tools, agents: r.agents };
    const t0 = performance.now();
    const run = await rollout(policy, episodes, engine);
    const t1 = performance.now();
    const replays = engineReplayRunner(replayPolicy, engine, { replayMode: c.replayMode, placeholder: c.placeholder, streamSeed: creditSeed, counterfactual: c.counterfactual });
    // The viewer's sample keeps the replayed answers behind v(S) (src/credit/record.ts).
    const recorder = setup.credit.recordGroups > 0 ? new ReplayRecorder(replays) : undefined;
    const runner = recorder?.runner ?? replays;
    const recorded: GroupRecord[] = [];
    // credit.messageLevel / credit.failurePairs: the judge, agent context and resampler over this step's policy.
    const extra = judgeOptions(c, judgePolicy, getProtocol(r.protocol), r.maxNewTokens, c.judge === 'llm' ? lmCandidateScorer(model, setup.tokenizer, r.maxContext) : undefined);
    const groups: CreditedGroup[] = [];
    const pairs: PreferencePair[] = [];
    const summaries = [];
    let replayItems = 0;
    let cached = 0;
    for (const episode of episodes) {
      const trajectories = run.trajectories.filter((t) => t.episodeId === episode.id);
      // Permutation sampling (Shapley beyond the exact limit) draws from the credit stream: reproducible on resume.
      const res = await computeCredits(trajectories, episode, runner, c, { ...extra, rng: creditRng });
      groups.push({ trajectories: res.credited });
      pairs.push(...res.pairs);
      summaries.push(...res.trajectories);
      replayItems += res.stats.replayItems;
      if (recorder) recorded.push(groupRecord(episode, trajectories, res, recorder, setup.credit));
      cached += res.stats.cachedCoalitions;
    }
    const t2 = performance.now();
    return {
      groups,
      pairs,
      record: recorder ? trainRecord(setup.credit, recorded, groups.length) : undefined,
      metrics: collectMetrics(
        run.trajectories,
        summaries,
        groups.flatMap((g) => g.trajectories.flatMap((ct) => ct.agents)),
        { generateS: (t1 - t0) / 1000, creditS: (t2 - t1) / 1000, policyCalls: run.stats.steps, maxBatch: run.stats.maxBatch, replayItems, cachedCoalitions: cached },
      ),
    };
  };
}
