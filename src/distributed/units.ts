import type { Config } from '../config/schema.ts';
import type { ReplayItem } from '../credit/counterfactual.ts';
import { engineReplayRunner, replaySettings } from '../credit/engine-adapters.ts';
import type { GroupPlan } from '../credit/plan.ts';
import type { Episode } from '../data/episode.ts';
import { LmPolicy, samplingAt } from '../rollout/lm-policy.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { rollout, type EngineOptions } from '../rollout/engine.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';

/**
 * The units of work of a distributed step's two generating stages, the same wherever they run (a
 * `sharp worker` or the trainer itself with rollout.distributed.local):
 *   1. rolloutGroup: the G trajectories of one question, in one batched engine run;
 *   2. replayTrajectory: one trajectory's planned counterfactual replays, in one batched engine run.
 * The plan and the credit are the trainer's (credit/step.ts), as in process.
 * Each unit samples from its own seeded RNG and batches only its own rows: batched matmuls sum in an
 * order that depends on the batch's shape, so a row's logits (and the token they sample) can differ
 * in the last bits between a batch of one group and a batch of all groups. Fixing the unit fixes the
 * numbers.
 */
export type RolloutConfig = Config['rollout'];
export type CreditConfig = Config['credit'];

export interface Loaded {
  model: CausalLM;
  tokenizer: Tokenizer;
}

/** What crosses the wire between units (JSON), applied on every path so all paths see the same values. */
export const wire = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

function policyOf(p: Loaded, r: RolloutConfig, seed: number, temperature = r.temperature): LmPolicy {
  return new LmPolicy(p.model, p.tokenizer, {
    ...samplingAt(temperature, r),
    maxContext: r.maxContext,
    rng: new Rng(seed),
  });
}

const engineOf = (r: RolloutConfig): EngineOptions => ({ cfg: r, agents: r.agents });

export interface GroupRollout {
  trajectories: Trajectory[];
  policyCalls: number;
  maxBatch: number;
}

export async function rolloutGroup(p: Loaded, episode: Episode, r: RolloutConfig, seed: number): Promise<GroupRollout> {
  const run = await rollout(policyOf(p, r, seed), [episode], engineOf(r));
  return wire({ trajectories: run.trajectories, policyCalls: run.stats.steps, maxBatch: run.stats.maxBatch });
}

/** One replay the credit plan asks of a trajectory (rollout/replay.ts ReplayItem without the trajectory). */
export type PlannedReplay = Omit<ReplayItem, 'traj' | 'episode'>;

/**
 * The replays of one trajectory, in plan order, each on its replica's sampling stream (`seed` is the streams' base).
 */
export async function replayTrajectory(
  p: Loaded,
  traj: Trajectory,
  episode: Episode,
  planned: readonly PlannedReplay[],
  r: RolloutConfig,
  c: CreditConfig,
  seed: number,
): Promise<Trajectory[]> {
  if (planned.length === 0) return [];
  const runner = engineReplayRunner(
    policyOf(p, r, seed, c.replayTemperature ?? r.temperature),
    engineOf(r),
    replaySettings(c, seed),
  );
  return wire(await runner(planned.map((x) => ({ ...x, traj, episode }))));
}

/** The plan's items of trajectory `t` of a group, in plan order. */
export function plannedFor(plan: GroupPlan, t: number): PlannedReplay[] {
  const traj = plan.trajectories[t]?.traj;
  return plan.items.filter((it) => it.traj === traj).map(({ traj: _t, episode: _e, ...rest }) => wire(rest));
}
