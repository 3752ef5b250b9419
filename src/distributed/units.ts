import type { Config } from '../config/schema.ts';
import { computeCredits } from '../credit/compute.ts';
import type { ReplayItem } from '../credit/counterfactual.ts';
import { engineReplayRunner } from '../credit/engine-adapters.ts';
import type { PreferencePair } from '../credit/first-error.ts';
import { groupRecord, ReplayRecorder, type GroupRecord } from '../credit/record.ts';
import type { TrajectoryCreditSummary } from '../credit/report.ts';
import type { CreditedTrajectory } from '../credit/credited.ts';
import type { Episode } from '../data/episode.ts';
import { LmPolicy, samplingAt } from '../rollout/lm-policy.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { rollout, type EngineOptions } from '../rollout/engine.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import { creditSeed } from './ids.ts';

/**
 * The units of work of a distributed step, the same wherever they run (a `sharp worker` or the
 * trainer itself with rollout.distributed.local):
 *   1. rolloutGroup: the G trajectories of one question, in one batched engine run;
 *   2. planReplays: the coalitions the credit module asks of each trajectory (LOO / Shapley);
 *   3. replayTrajectory: one trajectory's counterfactual replays, in one batched engine run;
 *   4. creditGroup: the group's credit from the replayed trajectories (no model needed).
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
  return new LmPolicy(p.model, p.tokenizer, { ...samplingAt(temperature, r), maxContext: r.maxContext, rng: new Rng(seed) });
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

/** One replay the credit module asks for: the masked delegations and the replica (its sampling stream). */
export interface PlannedReplay {
  masked: number[];
  replica: number;
}

/** The replays to run, per trajectory of the group (in the credit module's order). */
export type ReplayPlan = PlannedReplay[][];

class Planned extends Error {
  constructor(readonly items: ReplayItem[]) {
    super('replay plan');
  }
}

/**
 * Asks the credit module which replays it needs: computeCredits hands every item of the group to
 * its runner in one call, before it uses any value, so a runner that records and stops gives the plan.
 */
export async function planReplays(trajectories: readonly Trajectory[], episode: Episode, c: CreditConfig, seed: number): Promise<ReplayPlan> {
  const plan: ReplayPlan = trajectories.map(() => []);
  try {
    await computeCredits(trajectories, episode, (items) => Promise.reject(new Planned(items)), c, { rng: new Rng(creditSeed(seed)) });
  } catch (err) {
    if (!(err instanceof Planned)) throw err;
    const index = new Map(trajectories.map((t, i) => [t.id, i]));
    for (const it of err.items) plan[index.get(it.traj.id) as number]?.push({ masked: [...it.masked], replica: it.replica ?? 0 });
  }
  return plan;
}

/** The replays of one trajectory, in plan order, each on its replica's sampling stream (`seed` is the streams' base). */
export async function replayTrajectory(p: Loaded, traj: Trajectory, episode: Episode, planned: readonly PlannedReplay[], r: RolloutConfig, c: CreditConfig, seed: number): Promise<Trajectory[]> {
  if (planned.length === 0) return [];
  const runner = engineReplayRunner(policyOf(p, r, seed, c.replayTemperature ?? r.temperature), engineOf(r), { replayMode: c.replayMode, placeholder: c.placeholder, streamSeed: seed, counterfactual: c.counterfactual });
  return wire(await runner(planned.map((p) => ({ traj, episode, masked: [...p.masked], replica: p.replica }))));
}

export interface GroupOutcome {
  /** The group's trajectories with their agents' credit (and message shares) attached. */
  credited: CreditedTrajectory[];
  pairs: PreferencePair[];
  summaries: TrajectoryCreditSummary[];
  replayItems: number;
  cachedCoalitions: number;
  policyCalls: number;
  maxBatch: number;
  /** The group for `sharp view` with the replayed answers behind v(S) (credit.recordGroups > 0). */
  record?: GroupRecord;
}

/** The group's credit from its trajectories and their replays (`replays[t]` in the plan's order). */
export async function creditGroup(g: GroupRollout, episode: Episode, replays: readonly (readonly Trajectory[])[], c: CreditConfig, seed: number): Promise<GroupOutcome> {
  const next = g.trajectories.map(() => 0);
  const index = new Map(g.trajectories.map((t, i) => [t.id, i]));
  const runner = (items: ReplayItem[]): Promise<Trajectory[]> =>
    Promise.resolve(
      items.map((it) => {
        const t = index.get(it.traj.id) as number;
        const out = replays[t]?.[next[t] as number];
        if (!out) throw new Error(`credit: no replay ${next[t]} of trajectory ${it.traj.id} (the replay job returned ${replays[t]?.length ?? 0})`);
        next[t] = (next[t] as number) + 1;
        return out;
      }),
    );
  // The viewer's sample keeps the replayed answers behind v(S), as the in-process collect does.
  const recorder = c.recordGroups > 0 ? new ReplayRecorder(runner) : undefined;
  const res = await computeCredits(g.trajectories, episode, recorder?.runner ?? runner, c, { rng: new Rng(creditSeed(seed)) });
  return wire({
    credited: res.credited,
    pairs: res.pairs,
    summaries: res.trajectories.map((t) => ({ trajectoryId: t.trajectoryId, deltas: t.deltas, efficiencyResidual: t.efficiencyResidual, success: t.success, noise: t.noise })),
    replayItems: res.stats.replayItems,
    cachedCoalitions: res.stats.cachedCoalitions,
    policyCalls: g.policyCalls,
    maxBatch: g.maxBatch,
    record: recorder ? groupRecord(episode, g.trajectories, res, recorder, c) : undefined,
  });
}
