import type { Episode } from '../data/episode.ts';
import { runTrajectories, type EngineOptions, type RunItem } from './engine.ts';
import type { DelegationPlan, Forcing, TrajectoryPlan } from './plan.ts';
import type { Policy } from './policy.ts';
import { agentTurns } from './record.ts';
import type { AgentRecord, Message, Trajectory } from './types.ts';

/**
 * Counterfactual replays for the credit module, batched across
 * all items in one engine run (one generate call per decoding step for all of them):
 * - `final`: everything is kept; the reports of the masked delegations are replaced by the placeholder
 *   and only the planner's last message (its final answer) is regenerated.
 * - `replan`: the planner is regenerated from the turn after the first masked delegation on; its k-th
 *   delegation (in order) gets the recorded report of delegation k (the placeholder when k is masked)
 *   without running a worker; a worker runs only for delegations beyond the recorded ones.
 * - `exact`: no substitution; every message is regenerated under its recorded sampling choices
 *   (`forcedTokens`, or the recorded text for a policy without tokens) and every tool runs again. It
 *   reproduces the trajectory (the determinism check).
 * Kept workers are copied into the replay (so it stays a complete record); masked delegations have no
 * worker and their call is flagged `masked`.
 */
export type ReplayMode = 'final' | 'replan' | 'exact';

export interface ReplayItem {
  traj: Trajectory;
  episode: Episode;
  /** Delegation indices (0-based, in order of delegation) whose reports are replaced. */
  masked: number[];
  /** Trajectory id of the replay (default: `${traj.id}~${mode}:${masked}`; `exact` keeps traj.id). */
  id?: string;
}

export interface ReplayOptions extends EngineOptions {
  mode: ReplayMode;
  /** Report shown to the planner in place of a masked worker's (credit.placeholder). */
  placeholder: string;
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

const workerMessages = (traj: Trajectory, agent: AgentRecord): Message[] => traj.messages.filter((m) => m.agent === agent.id);

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

function counterfactualPlan(item: ReplayItem, recorded: RecordedDelegation[], mode: 'final' | 'replan', placeholder: string): TrajectoryPlan {
  const { traj } = item;
  const turns = agentTurns(traj, 0);
  const masked = new Set(item.masked);
  for (const k of masked) {
    if (!Number.isInteger(k) || k < 0 || k >= recorded.length) {
      throw new Error(`replay ${traj.id}: masked delegation ${k} does not exist (the trajectory has ${recorded.length} delegations)`);
    }
  }
  // First planner turn that is regenerated.
  const firstMasked = Math.min(...[...masked].map((k) => (recorded[k] as RecordedDelegation).turn));
  const from = mode === 'final' ? turns.length - 1 : masked.size === 0 ? turns.length : firstMasked + 1;
  return {
    plannerTurn: (t) => (t < from && turns[t] ? { kind: 'copy', message: turns[t] } : undefined),
    delegation: (k): DelegationPlan => {
      const rec = recorded[k];
      if (!rec) return { kind: 'run' };
      if (masked.has(k)) return { kind: 'fixed', report: placeholder, masked: true };
      const plan: DelegationPlan = { kind: 'fixed', report: rec.report, masked: rec.masked };
      if (rec.worker) plan.copy = { agent: rec.worker, messages: workerMessages(traj, rec.worker) };
      return plan;
    },
  };
}

export function replayId(item: ReplayItem, mode: ReplayMode): string {
  if (item.id !== undefined) return item.id;
  return mode === 'exact' ? item.traj.id : `${item.traj.id}~${mode}:${[...item.masked].sort((a, b) => a - b).join(',')}`;
}

/** Replays every item in one batched engine run; results in item order. */
export async function replay(policy: Policy, items: readonly ReplayItem[], opts: ReplayOptions): Promise<Trajectory[]> {
  const runItems: RunItem[] = items.map((item) => {
    if (item.traj.episodeId !== item.episode.id) throw new Error(`replay ${item.traj.id}: trajectory is of episode ${item.traj.episodeId}, not ${item.episode.id}`);
    const recorded = recordedDelegations(item.traj);
    const plan = opts.mode === 'exact' ? exactPlan(item.traj, recorded) : counterfactualPlan(item, recorded, opts.mode, opts.placeholder);
    return { id: replayId(item, opts.mode), episode: item.episode, sample: item.traj.sample, plan };
  });
  const { trajectories } = await runTrajectories(policy, runItems, opts);
  return trajectories;
}
