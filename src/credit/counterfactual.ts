import type { Episode } from '../data/episode.ts';
import type { ReplayItem } from '../rollout/replay.ts';
import type { Trajectory } from '../rollout/types.ts';
import { type Coalition, coalitionSize, fullCoalition, maskedDelegations, workerCount } from './coalitions.ts';
import type { GroupPlan } from './plan.ts';
import type { OutcomeFn } from './outcome.ts';

/**
 * Counterfactual values v(S) through replays (SHARP). The replay runner is injected so this module
 * stays pure: in training it wraps the engine's `replay` (engine-adapters.ts), in tests it can be
 * the same engine driven by a scripted policy.
 */
export type { ReplayItem };

/** Runs every item (one engine batch) and returns one replayed trajectory per item, in order. */
export type ReplayRunner = (items: ReplayItem[]) => Promise<Trajectory[]>;

/** v(S) of one trajectory, for the coalitions evaluated so far. */
export interface ValueTable {
  trajectoryId: string;
  /** Number of workers K. */
  k: number;
  /** R(tau): the recorded outcome (the broadcast reward). */
  recorded: number;
  values: Map<Coalition, number>;
  /**
   * Mean |v_r(N) - R(tau)| over the replays r of the full coalition: how often replaying with
   * nothing masked changes the outcome (the replay noise floor); 0 without workers.
   */
  noise: number;
  /** Counterfactual repair: v(N) with delegation d's subtask repaired, by d. */
  plannerRepairs?: Map<number, number>;
  /** The likelihood value's sequential form: v_lik after j reports were read, j = 0..K. */
  readThrough?: number[];
}

/**
 * Tables by trajectory id, shared across calls so that a coalition's value is computed once (the
 * LOO coalitions are reused by Shapley, and a later report does not replay again).
 */
export class CoalitionCache {
  private readonly tables = new Map<string, ValueTable>();

  table(traj: Trajectory, recorded: number): ValueTable {
    let t = this.tables.get(traj.id);
    if (!t) {
      t = { trajectoryId: traj.id, k: workerCount(traj), recorded, values: new Map(), noise: 0 };
      this.tables.set(traj.id, t);
    }
    return t;
  }

  get size(): number {
    return this.tables.size;
  }
}

export interface CoalitionRequest {
  traj: Trajectory;
  episode: Episode;
  coalitions: readonly Coalition[];
}

export interface EvaluateOptions {
  /** R of a trajectory, recorded or replayed (outcome.ts): the accuracy or the user's reward. */
  outcome: OutcomeFn;
  /** Replays averaged per coalition (the SHARP n). */
  replays: number;
}

export interface EvaluateStats {
  /** Runner invocations (0 when everything was cached, else 1: the whole group is one batch). */
  runnerCalls: number;
  /** Replayed trajectories requested (unique coalitions x replays). */
  replayItems: number;
  /** Coalitions whose value came from the cache or the recorded trajectory. */
  cachedCoalitions: number;
}

/**
 * Fills the value tables for every requested coalition of every trajectory of a group with ONE
 * runner call. Every v(S), v(N) included, is the mean outcome reward of the same `replays` replays that
 * mask the workers outside S; replay r of every coalition of a trajectory carries replica r, which
 * names its sampling stream (common random numbers: with nothing masked every Delta is exactly 0).
 * v(N) is always evaluated, so the table also holds the replay noise floor. A trajectory without
 * workers has nothing to mask: v(empty) = v(N) is its recorded outcome and nothing is replayed.
 */
export async function evaluateCoalitions(
  requests: readonly CoalitionRequest[],
  runner: ReplayRunner,
  opts: EvaluateOptions,
  cache: CoalitionCache = new CoalitionCache(),
): Promise<{ tables: ValueTable[]; stats: EvaluateStats }> {
  if (!Number.isInteger(opts.replays) || opts.replays < 1)
    throw new Error(`credit.replays: ${opts.replays} is not a positive integer`);
  const items: ReplayItem[] = [];
  const slots: { table: ValueTable; coalition: Coalition }[] = [];
  const tables: ValueTable[] = [];
  let cachedCoalitions = 0;
  for (const req of requests) {
    const table = cache.table(req.traj, opts.outcome(req.traj, req.episode));
    tables.push(table);
    const full = fullCoalition(table.k);
    if (table.k === 0) table.values.set(full, table.recorded);
    const pending = new Set<Coalition>();
    const wanted =
      req.coalitions.length === 0 || table.k === 0 || table.values.has(full)
        ? req.coalitions
        : [full, ...req.coalitions];
    for (const s of wanted) {
      if (!Number.isInteger(s) || s < 0 || s > full)
        throw new Error(`trajectory ${req.traj.id}: coalition ${s} is not a subset of its ${table.k} workers`);
      if (table.values.has(s) || pending.has(s)) {
        cachedCoalitions += 1;
        continue;
      }
      pending.add(s);
      const masked = maskedDelegations(s, table.k);
      for (let r = 0; r < opts.replays; r++) items.push({ traj: req.traj, episode: req.episode, masked, replica: r });
      slots.push({ table, coalition: s });
    }
  }
  if (items.length === 0) return { tables, stats: { runnerCalls: 0, replayItems: 0, cachedCoalitions } };
  const replayed = await runner(items);
  if (replayed.length !== items.length)
    throw new Error(`replay runner returned ${replayed.length} trajectories for ${items.length} items`);
  slots.forEach((slot, i) => {
    let sum = 0;
    let off = 0;
    for (let r = 0; r < opts.replays; r++) {
      const idx = i * opts.replays + r;
      const v = opts.outcome(replayed[idx], items[idx].episode);
      sum += v;
      off += Math.abs(v - slot.table.recorded);
    }
    slot.table.values.set(slot.coalition, sum / opts.replays);
    if (slot.coalition === fullCoalition(slot.table.k)) slot.table.noise = off / opts.replays;
  });
  return { tables, stats: { runnerCalls: 1, replayItems: items.length, cachedCoalitions } };
}

/** v(S) from a table; a coalition that was never evaluated is a programming error. */
export function valueOf(table: ValueTable, s: Coalition): number {
  const v = table.values.get(s);
  if (v === undefined)
    throw new Error(`trajectory ${table.trajectoryId}: coalition ${s} (size ${coalitionSize(s)}) was not evaluated`);
  return v;
}

/**
 * A group plan's value tables before any value: each trajectory's recorded outcome (the broadcast
 * reward), and for a trajectory without workers v(N) = v(empty) = that outcome (nothing to leave out).
 */
export function recordedTables(plan: GroupPlan, outcome: OutcomeFn): ValueTable[] {
  return plan.trajectories.map((p) => {
    const recorded = outcome(p.traj, plan.episode);
    const t: ValueTable = { trajectoryId: p.traj.id, k: p.k, recorded, values: new Map(), noise: 0 };
    if (p.k === 0) t.values.set(fullCoalition(0), recorded);
    return t;
  });
}

/**
 * Stage "evaluate" of credit: the values v(S) of a group plan (plan.ts) from its replays, `replayed[i]`
 * the outcome of `plan.items[i]`. Every value is the mean outcome reward of its `replays` replays, each
 * replayed trajectory scored whole (a user reward sees what the replay did, not only its answer); the
 * full coalition's also gives the noise floor. A trajectory without workers replays nothing:
 * v(N) = v(empty) is its recorded outcome.
 */
export function evaluateReplays(
  plan: GroupPlan,
  replayed: readonly Trajectory[],
  outcome: OutcomeFn,
): { tables: ValueTable[]; stats: EvaluateStats } {
  if (replayed.length !== plan.items.length)
    throw new Error(`replay runner returned ${replayed.length} trajectories for ${plan.items.length} items`);
  const tables = recordedTables(plan, outcome);
  if (plan.scores.length > 0) throw new Error('credit: a likelihood plan has no replays to evaluate (likelihood.ts)');
  plan.values.forEach((key, i) => {
    if ('readThrough' in key) throw new Error('credit: a sequential likelihood value in a replay plan');
    const table = tables[key.t];
    let sum = 0;
    let off = 0;
    for (let r = 0; r < plan.replays; r++) {
      const idx = i * plan.replays + r;
      const v = outcome(replayed[idx], plan.episode);
      sum += v;
      off += Math.abs(v - table.recorded);
    }
    if ('plannerRepair' in key) {
      table.plannerRepairs ??= new Map();
      table.plannerRepairs.set(key.plannerRepair, sum / plan.replays);
      return;
    }
    table.values.set(key.coalition, sum / plan.replays);
    if (key.coalition === fullCoalition(table.k)) table.noise = off / plan.replays;
  });
  return {
    tables,
    stats: {
      runnerCalls: plan.items.length > 0 ? 1 : 0,
      replayItems: plan.items.length,
      cachedCoalitions: plan.repeated,
    },
  };
}
