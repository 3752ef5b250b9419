import type { Episode } from '../data/episode.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import type { Rng } from '../random/rng.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import type { Collected, CollectContext } from '../train/grpo/types.ts';
import { assemble } from './assemble.ts';
import { groupSeed, replaySeed } from './ids.ts';
import { creditGroup, planReplays, replayTrajectory, rolloutGroup, type CreditConfig, type GroupOutcome, type RolloutConfig } from './units.ts';

/**
 * The distributed step run in the trainer process (rollout.distributed.local): the same units with
 * the same seeds, one after the other. A run with workers gives exactly what this gives.
 */
export interface UnitsSetup {
  tokenizer: Tokenizer;
  rollout: RolloutConfig;
  credit: CreditConfig;
}

/** One draw from the run RNG per step: resume restores the RNG, so a resumed step gets the same seed. */
export const stepSeedOf = (rng: Rng): number => rng.int(0, 0x7fffffff);

export function makeLocalCollect(setup: UnitsSetup): (episodes: Episode[], model: CausalLM, rng: Rng, ctx: CollectContext) => Promise<Collected> {
  return async (episodes, model, rng) => {
    const stepSeed = stepSeedOf(rng);
    const p = { model, tokenizer: setup.tokenizer };
    const outcomes: GroupOutcome[] = [];
    let generate = 0;
    let credit = 0;
    for (const [q, episode] of episodes.entries()) {
      const seed = groupSeed(stepSeed, q);
      const t0 = performance.now();
      const g = await rolloutGroup(p, episode, setup.rollout, seed);
      const t1 = performance.now();
      const plan = await planReplays(g.trajectories, episode, setup.credit, seed);
      const replays = [];
      for (const [t, traj] of g.trajectories.entries()) replays.push(await replayTrajectory(p, traj, episode, plan[t] ?? [], setup.rollout, setup.credit, replaySeed(seed, t)));
      outcomes.push(await creditGroup(g, episode, replays, setup.credit, seed));
      generate += (t1 - t0) / 1000;
      credit += (performance.now() - t1) / 1000;
    }
    return assemble(outcomes, { generate, credit }, setup.credit);
  };
}
