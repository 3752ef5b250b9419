import type { AgentRecord, Message, ToolCall, Trajectory } from '../src/rollout/types.ts';
import { fullCoalition, workerCount } from '../src/credit/coalitions.ts';
import { evaluateReplays, type ReplayItem, type ReplayRunner } from '../src/credit/counterfactual.ts';
import { assignCredit, type AssignOptions, type AssignedGroup } from '../src/credit/assign.ts';
import type { CreditConfig } from '../src/credit/config.ts';
import { planReplays } from '../src/credit/plan.ts';
import { groupRecord, ReplayAnswers, type GroupRecord } from '../src/credit/record.ts';
import { type OutcomeFn, outcomeFunction } from '../src/credit/outcome.ts';
import type { Episode } from '../src/data/episode.ts';
import type { CreditedTrajectory } from '../src/credit/credited.ts';
import type { AgentCredit } from '../src/credit/reward.ts';

/**
 * Hand-built trajectories for the credit tests (tags protocol text), laid out as the engine records
 * them: planner system/user, then per delegation the planner's <delegate> message, the worker's
 * messages and the report as the planner's tool result, then the planner's <answer>. Only data: no
 * behaviour of the engine is imitated here (the end-to-end test uses the real engine).
 */
interface WorkerSpec {
  subtask: string;
  /** Report; null = ended without answering. */
  answer: string | null;
  /** Validity of each worker tool call (default: one valid search). */
  calls?: boolean[];
}

export interface TrajectorySpec {
  id: string;
  episodeId?: string;
  workers: WorkerSpec[];
  finalAnswer: string | null;
  /** Validity of each delegate call (default all valid). */
  delegateValid?: boolean[];
}

export function makeTrajectory(spec: TrajectorySpec): Trajectory {
  const messages: Message[] = [];
  const push = (
    m: Omit<Message, 'index' | 'tokenIds' | 'logprobs' | 'toolCalls'> & { toolCalls?: ToolCall[] },
  ): void => {
    messages.push({ index: messages.length, tokenIds: [], logprobs: [], toolCalls: [], ...m });
  };
  const agents: AgentRecord[] = [
    {
      id: 0,
      role: 'planner',
      delegation: null,
      answer: spec.finalAnswer,
      endReason: spec.finalAnswer === null ? 'max_turns' : 'answer',
    },
  ];
  push({ agent: 0, role: 'planner', chatRole: 'system', text: 'You are the planner.' });
  push({ agent: 0, role: 'planner', chatRole: 'user', text: 'question' });
  spec.workers.forEach((w, d) => {
    const id = d + 1;
    agents.push({
      id,
      role: 'worker',
      delegation: d,
      subtask: w.subtask,
      answer: w.answer,
      endReason: w.answer === null ? 'max_turns' : 'answer',
    });
    const valid = spec.delegateValid?.[d] ?? true;
    push({
      agent: 0,
      role: 'planner',
      chatRole: 'assistant',
      text: `<delegate>${w.subtask}</delegate>`,
      toolCalls: [{ name: 'delegate', args: w.subtask, valid, workerAgent: id }],
    });
    push({ agent: id, role: 'worker', chatRole: 'system', text: 'You are a worker.' });
    push({ agent: id, role: 'worker', chatRole: 'user', text: w.subtask });
    for (const ok of w.calls ?? [true]) {
      push({
        agent: id,
        role: 'worker',
        chatRole: 'assistant',
        text: `<search>${w.subtask}</search>`,
        toolCalls: [{ name: 'search', args: w.subtask, valid: ok, result: ok ? 'paragraph' : 'error' }],
      });
      push({ agent: id, role: 'worker', chatRole: 'tool', text: '<result>paragraph</result>' });
    }
    if (w.answer !== null)
      push({ agent: id, role: 'worker', chatRole: 'assistant', text: `<answer>${w.answer}</answer>` });
    push({
      agent: 0,
      role: 'planner',
      chatRole: 'tool',
      text: `<result>${w.answer ?? 'the worker gave no answer'}</result>`,
    });
  });
  push({
    agent: 0,
    role: 'planner',
    chatRole: 'assistant',
    text: spec.finalAnswer === null ? 'I am not sure.' : `<answer>${spec.finalAnswer}</answer>`,
  });
  return { id: spec.id, episodeId: spec.episodeId ?? 'ep', sample: 0, messages, agents, finalAnswer: spec.finalAnswer };
}

/**
 * A replay runner over a known game: the replayed answer is 'yes' iff `game(reporting workers)`.
 * It stands in for the engine only to check the bookkeeping (batching, caching, averaging); the
 * end-to-end test drives the real engine.
 */
export function gameRunner(
  game: (reporting: number, k: number, r: number, trajectoryId: string) => boolean,
): ReplayRunner & { batches: ReplayItem[][] } {
  const batches: ReplayItem[][] = [];
  const repeat = new Map<string, number>();
  const run = (items: ReplayItem[]) => {
    batches.push(items);
    return Promise.resolve(
      items.map((it) => {
        const k = workerCount(it.traj);
        const reporting = fullCoalition(k) & ~it.masked.reduce((acc, m) => acc | (1 << m), 0);
        const key = `${it.traj.id}/${reporting}`;
        const r = repeat.get(key) ?? 0;
        repeat.set(key, r + 1);
        return { ...it.traj, finalAnswer: game(reporting, k, r, it.traj.id) ? 'yes' : 'no' };
      }),
    );
  };
  return Object.assign(run, { batches });
}

/**
 * The credit stages of one group, as a training step runs them, with the viewer's record of it:
 * plan -> the runner -> evaluate -> assign -> groupRecord (the replayed answers behind v(S)).
 */
export async function creditAndRecord(
  group: readonly Trajectory[],
  episode: Episode,
  runner: ReplayRunner,
  cfg: CreditConfig,
  opts: AssignOptions = {},
  outcome?: OutcomeFn,
): Promise<{ res: AssignedGroup; record: GroupRecord }> {
  const plan = planReplays(group, episode, cfg);
  const replayed = plan.items.length > 0 ? await runner(plan.items) : [];
  const { tables } = evaluateReplays(plan, replayed, outcome ?? outcomeFunction(cfg));
  const res = await assignCredit(plan, tables, cfg, opts);
  // The record scores replays as credit did: by the user's outcome when one is given.
  const answers = new ReplayAnswers(plan, replayed, outcome);
  return { res, record: groupRecord(episode, res.credited, answers, cfg, res.pairs) };
}

/** Hand-made credit attached to trajectories (advantage and loop tests): agents' credits by trajectory id and agent. */
export function withCredits(group: readonly Trajectory[], credits: readonly AgentCredit[]): CreditedTrajectory[] {
  return group.map((trajectory) => {
    const agents = trajectory.agents.map((a) => {
      const c = credits.find((x) => x.trajectoryId === trajectory.id && x.agent === a.id);
      if (!c) throw new Error(`test: no credit for trajectory ${trajectory.id} agent ${a.id}`);
      return c;
    });
    const k = workerCount(trajectory);
    const success = agents[0]?.parts.broadcast ?? 0;
    return {
      trajectory,
      agents,
      credit: {
        trajectoryId: trajectory.id,
        success,
        noise: 0,
        k,
        deltas: [],
        workerMarginal: new Array<number>(k).fill(0),
        plannerMarginal: 0,
        values: [],
      },
    };
  });
}
