import type { Counterfactual } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { runTrajectories, type EngineOptions, type RunItem } from './engine.ts';
import type { DelegationPlan, Forcing, TrajectoryPlan } from './plan.ts';
import type { Policy } from './policy.ts';
import { agentTurns } from './record.ts';
import type { AgentRecord, Message, Trajectory } from './types.ts';

/**
 * Counterfactual replays for the credit module, batched across
 * all items in one engine run (one generate call per decoding step for all of them). Every
 * coalition of a trajectory, the one that masks nothing included, goes through the same procedure:
 * - `final`: everything is kept; the reports of the masked delegations are replaced by the placeholder
 *   and only the planner's last message (its final answer) is regenerated.
 * - `replan`: the planner is regenerated from the turn after its first delegation on. A delegation
 *   it makes again reuses the recorded report only when its worker is not masked and the subtask is
 *   byte-identical to the recorded one; a changed subtask runs a worker (through the same policy, in
 *   the same batches), and a masked delegation gets the placeholder.
 * - `exact`: no substitution; every message is regenerated under its recorded sampling choices
 *   (`forcedTokens`, or the recorded text for a policy without tokens) and every tool runs again. It
 *   reproduces the trajectory (the determinism check).
 * With `streamSeed` set, replay r of a trajectory samples from streams keyed by (seed, trajectory,
 * r, agent, turn) whatever its mask: common random numbers, so that a mask that changes nothing
 * changes no sample, and the difference between two coalitions comes from the mask alone
 * (docs/architecture.md, "Credit").
 * Kept workers are copied into the replay (so it stays a complete record); masked delegations have no
 * worker and their call is flagged `masked`.
 */
type ReplayMode = 'final' | 'replan' | 'exact';

export interface ReplayItem {
  traj: Trajectory;
  episode: Episode;
  /** Delegation indices (0-based, in order of delegation) whose reports are replaced. */
  masked: number[];
  /** Which of the n replays of its coalition this is (0-based; default 0): it names the sampling stream. */
  replica?: number;
  /**
   * Counterfactual `repair`: what replaces a delegation. `report` is the reference report a masked
   * delegation's worker should have given (the planner reads it instead of the recorded one; a masked
   * delegation without one keeps its recorded report); `subtask` runs the delegation's worker on the
   * gold sub-question instead of the subtask the planner wrote (a repaired delegation, masked or not).
   */
  substitutes?: Substitute[];
}

export interface Substitute {
  delegation: number;
  report?: string;
  subtask?: string;
}

export interface ReplayOptions extends EngineOptions {
  mode: ReplayMode;
  /** Report shown to the planner in place of a masked worker's (credit.placeholder). */
  placeholder: string;
  /** What happens to the delegations of `masked` (default `mask`; config/sections/credit.ts Counterfactual). */
  counterfactual?: Counterfactual;
  /** Base of the common random numbers (see above); absent: the policy's own stream. */
  streamSeed?: number;
}

/** One executed delegation of a recorded trajectory. */
interface RecordedDelegation {
  /** Planner turn (index among its assistant messages) that made the call. */
  turn: number;
  report: string;
  masked: boolean;
  worker?: AgentRecord;
}

function recordedDelegations(traj: Trajectory): RecordedDelegation[] {
  const out: RecordedDelegation[] = [];
  agentTurns(traj, 0).forEach((m, turn) => {
    for (const c of m.toolCalls) {
      // Executed delegations are exactly the valid delegate calls (a call over a limit is invalid).
      if (c.name !== 'delegate' || !c.valid) continue;
      const d: RecordedDelegation = { turn, report: c.result ?? '', masked: c.masked === true };
      if (c.workerAgent !== undefined) d.worker = traj.agents[c.workerAgent];
      out.push(d);
    }
  });
  return out;
}

const workerMessages = (traj: Trajectory, agent: AgentRecord): Message[] =>
  traj.messages.filter((m) => m.agent === agent.id);

function exactPlan(traj: Trajectory, recorded: RecordedDelegation[]): TrajectoryPlan {
  const turns = agentTurns(traj, 0);
  const force = (m: Message | undefined): Forcing | undefined => (m ? { kind: 'force', message: m } : undefined);
  return {
    plannerTurn: (t) => force(turns[t]),
    delegation: (k): DelegationPlan => {
      const rec = recorded[k];
      if (!rec) return { kind: 'run' };
      if (!rec.worker) return { kind: 'fixed', report: rec.report, masked: rec.masked };
      const wTurns = agentTurns(traj, rec.worker.id);
      return { kind: 'run', workerTurn: (t) => force(wTurns[t]) };
    },
  };
}

function counterfactualPlan(
  item: ReplayItem,
  recorded: RecordedDelegation[],
  mode: 'final' | 'replan',
  placeholder: string,
  counterfactual: Counterfactual,
): TrajectoryPlan {
  const { traj } = item;
  const turns = agentTurns(traj, 0);
  const masked = new Set(item.masked);
  const substitutes = new Map((item.substitutes ?? []).map((s) => [s.delegation, s]));
  for (const k of [...masked, ...substitutes.keys()]) {
    if (!Number.isInteger(k) || k < 0 || k >= recorded.length) {
      throw new Error(
        `replay ${traj.id}: ${masked.has(k) ? 'masked' : 'repaired'} delegation ${k} does not exist (the ` +
          `trajectory has ${recorded.length} delegations)`,
      );
    }
  }
  if (substitutes.size > 0 && counterfactual !== 'repair')
    throw new Error(`replay ${traj.id}: substitutes need the repair counterfactual, not ${counterfactual}`);
  // First planner turn that is regenerated: the same for every coalition, so v(N) is measured as v(S) is.
  const first = recorded[0];
  const from = mode === 'final' ? turns.length - 1 : first ? first.turn + 1 : turns.length;
  return {
    plannerTurn: (t) => (t < from && turns[t] ? { kind: 'copy', message: turns[t] } : undefined),
    delegation: (k, subtask): DelegationPlan => {
      const rec = recorded[k];
      if (!rec) return { kind: 'run' };
      const sub = substitutes.get(k);
      if (sub?.subtask !== undefined) return { kind: 'run', subtask: sub.subtask };
      if (masked.has(k)) {
        if (counterfactual === 'resample') return { kind: 'run' };
        if (counterfactual === 'mask') return { kind: 'fixed', report: placeholder, masked: true };
        if (sub?.report !== undefined) return { kind: 'fixed', report: sub.report, masked: true };
      }
      // A report answers the subtask it was asked: a regenerated delegation that asks something else gets a worker of
      // its own.
      if (mode === 'replan' && rec.worker?.subtask !== subtask) return { kind: 'run' };
      const plan: DelegationPlan = { kind: 'fixed', report: rec.report, masked: rec.masked };
      if (rec.worker) plan.copy = { agent: rec.worker, messages: workerMessages(traj, rec.worker) };
      return plan;
    },
  };
}

/**
 * Trajectory id of a replay: `${traj.id}~${mode}:${masked}` (`~${mode}+resample:` or `+repair:` for
 * those counterfactuals; `/d${k}` per repaired delegation subtask; `#r` for replica r > 0); `exact`
 * keeps traj.id.
 */
function replayId(item: ReplayItem, mode: ReplayMode, counterfactual: Counterfactual): string {
  if (mode === 'exact') return item.traj.id;
  const r = item.replica ?? 0;
  const tag = counterfactual === 'mask' ? '' : `+${counterfactual}`;
  const tasks = (item.substitutes ?? [])
    .filter((s) => s.subtask !== undefined)
    .map((s) => `/d${s.delegation}`)
    .join('');
  const masked = [...item.masked].sort((a, b) => a - b).join(',');
  return `${item.traj.id}~${mode}${tag}:${masked}${tasks}${r > 0 ? `#${r}` : ''}`;
}

/** Replays every item in one batched engine run; results in item order. */
export async function replay(policy: Policy, items: readonly ReplayItem[], opts: ReplayOptions): Promise<Trajectory[]> {
  const runItems: RunItem[] = items.map((item) => {
    if (item.traj.episodeId !== item.episode.id)
      throw new Error(
        `replay ${item.traj.id}: trajectory is of episode ${item.traj.episodeId}, not ${item.episode.id}`,
      );
    const recorded = recordedDelegations(item.traj);
    const counterfactual = opts.counterfactual ?? 'mask';
    const plan =
      opts.mode === 'exact'
        ? exactPlan(item.traj, recorded)
        : counterfactualPlan(item, recorded, opts.mode, opts.placeholder, counterfactual);
    const run: RunItem = {
      id: replayId(item, opts.mode, counterfactual),
      episode: item.episode,
      sample: item.traj.sample,
      plan,
    };
    if (opts.streamSeed !== undefined && opts.mode !== 'exact')
      run.stream = `${opts.streamSeed}:${item.traj.id}#${item.replica ?? 0}`;
    return run;
  });
  const { trajectories } = await runTrajectories(policy, runItems, opts);
  return trajectories;
}
