/**
 * The multi-agent rollout engine. A planner delegates subtasks;
 * each delegation runs a worker sub-episode whose final answer is the planner's tool result. All
 * trajectories of a run advance together: at each decoding step every agent that is generating goes
 * into one `policy.generate` call (batcher.ts). Every message is recorded (record.ts).
 */
import type { Config } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import { mixedHash32 } from '../random/hash.ts';
import { createWorkerTools } from '../tools/registry.ts';
import { capToolResult } from '../tools/result-cap.ts';
import type { Tool, ToolOutcome } from '../tools/types.ts';
import { startUserTools } from '../tools/user/user-tools.ts';
import { StepBatcher, type BatchStats } from './batcher.ts';
import { FRESH_PLAN, type Forcing, type TrajectoryPlan } from './plan.ts';
import type { Policy, PolicyRequest, PolicyResponse, RequestMeta } from './policy.ts';
import { getProtocol, type Protocol } from './protocol/index.ts';
import { catalogOf, catalogSpecs } from './protocol/tool-catalog.ts';
import { ROLE_TOOLS, ROOT_TOOLS, type AgentsMode } from './protocol/tool-specs.ts';
import { TrajectoryBuilder } from './record.ts';
import type { AgentRecord, EndReason, Message, Role, ToolCall, Trajectory } from './types.ts';

export type RolloutConfig = Config['rollout'];
export type { AgentsMode } from './protocol/tool-specs.ts';
/** Worker tools of one episode, by name. */
type ToolFactory = (episode: Episode) => Record<string, Tool>;

export interface EngineOptions {
  cfg: RolloutConfig;
  /**
   * Default: `createWorkerTools(episode, cfg)` (src/tools/registry.ts) over the episode's paragraphs;
   * pass a factory for the pooled corpus (`createWorkerTools(e, cfg, { pooled })`).
   */
  tools?: ToolFactory;
  /**
   * Agent system (ROOT_TOOLS): multi (default, planner + workers), single (one agent with the worker tools), direct (no
   * tools).
   */
  agents?: AgentsMode;
}

/** One trajectory to run. */
export interface RunItem {
  id: string;
  episode: Episode;
  /** Index in its group of G. */
  sample: number;
  /** Fresh rollout when absent; replays fix parts of it (replay.ts). */
  plan?: TrajectoryPlan;
  /**
   * Sampling stream key: every message generated in this run draws from its own stream, seeded by
   * (stream, agent, turn), instead of the policy's shared one. Replays of one trajectory under
   * different masks then share their random numbers (common random numbers), so two coalitions
   * sample alike wherever their contexts agree. Absent: the policy's stream (fresh rollouts).
   */
  stream?: string;
}

export type { RequestMeta };

/** Reads `meta` of a request made by this engine (one-line error otherwise). */
export function requestMeta(req: PolicyRequest): RequestMeta {
  const m = req.meta;
  if (!m || typeof m.trajectoryId !== 'string' || !m.episode)
    throw new Error(`policy request ${req.key}: meta lacks the engine's episode/agent fields`);
  return m;
}

export interface RunResult {
  trajectories: Trajectory[];
  stats: BatchStats;
}

/** Runs the items together (one batched generate per decoding step); results in item order. */
export async function runTrajectories(
  policy: Policy,
  items: readonly RunItem[],
  opts: EngineOptions,
): Promise<RunResult> {
  // The user tools of rollout.tools: started by the command already, or here (a `sharp worker`'s first job).
  const tools = catalogOf(await startUserTools(opts.cfg.tools));
  const protocol = getProtocol(opts.cfg.protocol, tools);
  const mode = opts.agents ?? 'multi';
  const roleTools: Record<Role, readonly string[]> = { planner: ROLE_TOOLS.planner, worker: tools.workerTools };
  const rootTools = mode === 'single' ? tools.workerTools : ROOT_TOOLS[mode];
  const rootPrompt = { multi: opts.cfg.plannerPrompt, single: opts.cfg.singlePrompt, direct: opts.cfg.directPrompt }[
    mode
  ];
  const prompts = {
    planner: protocol.systemPrompt(
      rootPrompt,
      catalogSpecs(tools, rootTools),
      rootTools.includes('delegate') ? opts.cfg.maxParallelDelegations : 1,
    ),
    worker: protocol.systemPrompt(opts.cfg.workerPrompt, catalogSpecs(tools, tools.workerTools)),
  };
  const toolCache = new Map<Episode, Record<string, Tool>>();
  const toolsOf = (e: Episode): Record<string, Tool> => {
    let t = toolCache.get(e);
    if (!t) toolCache.set(e, (t = opts.tools ? opts.tools(e) : createWorkerTools(e, opts.cfg)));
    return t;
  };
  const batcher = new StepBatcher(policy);
  const trajectories = await batcher.run(
    items.map(
      (item) => (gen: Generate) =>
        new TrajectoryRun(item, {
          cfg: opts.cfg,
          protocol,
          prompts,
          rootTools,
          roleTools,
          gen,
          branch: (fns) => batcher.branch(fns),
          tools: () => toolsOf(item.episode),
        }).run(),
    ),
  );
  return { trajectories, stats: { ...batcher.stats } };
}

/** Fresh rollouts: every episode x `groupSize` trajectories (GRPO groups), ids `${episode.id}/${sample}`. */
export async function rollout(
  policy: Policy,
  episodes: readonly Episode[],
  opts: EngineOptions & { groupSize?: number },
): Promise<RunResult> {
  const g = opts.groupSize ?? opts.cfg.groupSize;
  const items = episodes.flatMap((episode) =>
    Array.from({ length: g }, (_, sample) => ({ id: `${episode.id}/${sample}`, episode, sample })),
  );
  return runTrajectories(policy, items, opts);
}

type Generate = (req: PolicyRequest, lane?: number) => Promise<PolicyResponse>;

/**
 * Seed of one message's sampling stream: (stream, agent, turn). Agents are named by role and
 * delegation, not by their index in the record, so the worker of delegation k draws the same
 * numbers in every replay whatever ran before it.
 */
function streamSeed(stream: string, agent: Pick<AgentRecord, 'role' | 'delegation'>, turn: number): number {
  const who = agent.role === 'planner' ? 'p' : `w${agent.delegation ?? ''}`;
  return mixedHash32(`${stream}/${who}/${turn}`) | 0;
}

interface RunContext {
  cfg: RolloutConfig;
  protocol: Protocol;
  prompts: Record<Role, string>;
  /** Tools of the root agent (agent 0) under the run's agent system. */
  rootTools: readonly string[];
  /** Tools of each role (the workers': rollout.tools, built-ins and user tools). */
  roleTools: Readonly<Record<Role, readonly string[]>>;
  gen: Generate;
  /** Runs the parallel delegations of one message as branches of this trajectory's task (batcher.ts). */
  branch: <T>(fns: readonly (() => Promise<T>)[]) => Promise<T[]>;
  tools: () => Record<string, Tool>;
}

/** Result of executing one call; `stop` ends the calling agent (a limit was hit). */
interface ExecOutcome extends ToolOutcome {
  stop?: EndReason;
  workerAgent?: number;
  masked?: boolean;
}

type Generated = Pick<Message, 'text' | 'tokenIds' | 'logprobs' | 'finishReason'> & { promptTokens: number };

const errorText = (error: string): string => `Error: ${error}`;

/** One trajectory: the planner loop, with worker loops run inside its delegations. */
class TrajectoryRun {
  private readonly b: TrajectoryBuilder;
  private readonly plan: TrajectoryPlan;
  private delegations = 0;

  constructor(
    private readonly item: RunItem,
    private readonly ctx: RunContext,
  ) {
    this.b = new TrajectoryBuilder(item.id, item.episode.id, item.sample);
    this.plan = item.plan ?? FRESH_PLAN;
  }

  async run(): Promise<Trajectory> {
    const planner = this.b.addAgent('planner', null);
    this.b.addPrompt(planner, 'system', this.ctx.prompts.planner);
    this.b.addPrompt(planner, 'user', this.item.episode.question);
    await this.agentLoop(
      planner,
      (t) => this.plan.plannerTurn(t),
      (name, args) => (name === 'delegate' ? this.delegate(args) : this.useTool(name, args)),
    );
    this.b.traj.finalAnswer = planner.answer;
    return this.b.traj;
  }

  /**
   * One agent's turns until it answers or hits a limit. A call on the agent's last
   * allowed turn is not executed (its result could never be read) and is recorded as not executed.
   */
  private async agentLoop(
    agent: AgentRecord,
    forcing: (turn: number) => Forcing | undefined,
    exec: (name: string, args: string) => Promise<ExecOutcome>,
  ): Promise<void> {
    const { cfg, protocol } = this.ctx;
    const limit = agent.role === 'planner' ? cfg.maxPlannerTurns : cfg.maxWorkerTurns;
    const allowed = agent.id === 0 ? this.ctx.rootTools : this.ctx.roleTools[agent.role];
    const results: RequestMeta['results'] = [];
    const end = (reason: EndReason): void => {
      agent.endReason = reason;
    };
    for (let turn = 0; turn < limit; turn++) {
      const gen = await this.obtain(agent, turn, forcing(turn), results);
      const msg = this.b.addAssistant(agent, gen);
      const action = protocol.parse(msg.text);
      if (action.kind === 'answer') {
        agent.answer = action.text;
        return end('answer');
      }
      // The context is full when prompt + message reach the limit (the LM cuts its budget there).
      const overContext = gen.promptTokens > 0 && gen.promptTokens + gen.tokenIds.length >= cfg.maxContext;
      if (action.kind === 'none')
        return end(overContext ? 'max_context' : gen.finishReason === 'length' ? 'max_new_tokens' : 'no_action');
      const lastTurn = turn === limit - 1;
      // The calls of the message: one, or several delegations that run side by side (SHARP's parallel workers).
      let error: string | null = null;
      let pending: { name: string; args: string; rawArgs: string }[];
      if (action.kind === 'invalid') {
        error = action.error;
        pending = [{ name: action.name, args: '', rawArgs: action.rawArgs }];
      } else if (action.kind === 'calls') {
        error = this.parallelError(
          agent,
          action.calls.map((c) => c.name),
        );
        pending =
          error === null
            ? action.calls
            : [{ name: action.calls[0]?.name ?? '', args: '', rawArgs: action.calls[0]?.rawArgs ?? '' }];
      } else {
        pending = [action];
        if (!allowed.includes(action.name))
          error =
            `tool '${action.name}' is not available to the ${agent.role} (its tools: ` +
            `${[...allowed, 'answer'].join(', ')})`;
      }
      const calls: ToolCall[] = pending.map((c) => ({ name: c.name, args: c.rawArgs, valid: false }));
      msg.toolCalls.push(...calls);
      // Limits end the agent before anything runs; an invalid call is still recorded with its error.
      const stop: EndReason | null = overContext
        ? 'max_context'
        : gen.finishReason === 'length' && action.kind === 'invalid'
          ? 'max_new_tokens'
          : lastTurn
            ? 'max_turns'
            : null;
      if (stop) {
        for (const call of calls) call.error = error ?? `not executed: ${stop}`;
        return end(stop);
      }
      let outs: ExecOutcome[];
      if (error !== null) {
        (calls[0] as ToolCall).error = error;
        outs = [{ ok: false, output: errorText(error) }];
      } else {
        // Whatever the tool, one result adds a bounded number of characters to the prompt. Several
        // delegations run concurrently, so their workers share the engine's decoding steps.
        const run = pending.map((c) => () => exec(c.name, c.args));
        outs = (
          pending.length === 1 ? [await (run[0] as () => Promise<ExecOutcome>)()] : await this.ctx.branch(run)
        ).map(capToolResult);
        let stopped: EndReason | undefined;
        outs.forEach((out, i) => {
          const call = calls[i] as ToolCall;
          call.valid = out.ok;
          if (!out.ok) call.error = out.output;
          if (out.retrievedIdx) call.retrievedIdx = [...out.retrievedIdx];
          if (out.retrievedIds) call.retrievedIds = [...out.retrievedIds];
          if (out.workerAgent !== undefined) call.workerAgent = out.workerAgent;
          if (out.masked) call.masked = true;
          stopped ??= out.stop;
        });
        if (stopped) return end(stopped);
      }
      outs.forEach((out, i) => {
        const call = calls[i] as ToolCall;
        call.result = out.output;
        const shown = protocol.formatResult(out.output);
        this.b.addPrompt(agent, shown.role, shown.content);
        const entry: RequestMeta['results'][number] = { name: call.name, valid: call.valid, output: out.output };
        if (call.retrievedIdx) entry.retrievedIdx = call.retrievedIdx;
        results.push(entry);
      });
    }
    end('max_turns');
  }

  /**
   * Why several calls in one message cannot run (null when they can): only delegations of an agent
   * that may delegate run side by side, at most rollout.maxParallelDelegations of them.
   */
  private parallelError(agent: AgentRecord, names: readonly string[]): string | null {
    // max > 1 only for an agent that may delegate (maxParallel).
    const max = this.maxParallel(agent);
    if (max > 1 && names.every((n) => n === 'delegate')) {
      return names.length <= max ? null : `${names.length} delegations in one message; at most ${max} run side by side`;
    }
    return `several calls in one message (${names.join(', ')}); make exactly one call per message${
      max > 1 ? ` (only delegations may run side by side, at most ${max})` : ''
    }`;
  }

  /** Delegations one message of this agent may carry (1: one call per message). */
  private maxParallel(agent: AgentRecord): number {
    const allowed = agent.id === 0 ? this.ctx.rootTools : this.ctx.roleTools[agent.role];
    return allowed.includes('delegate') ? this.ctx.cfg.maxParallelDelegations : 1;
  }

  /** The next assistant message: copied or text-forced from a record, or generated (possibly token-forced). */
  private async obtain(
    agent: AgentRecord,
    turn: number,
    forcing: Forcing | undefined,
    results: RequestMeta['results'],
  ): Promise<Generated> {
    if (forcing && (forcing.kind === 'copy' || forcing.message.tokenIds.length === 0)) {
      const m = forcing.message;
      return {
        text: m.text,
        tokenIds: m.tokenIds,
        logprobs: m.logprobs,
        finishReason: m.finishReason,
        promptTokens: 0,
      };
    }
    const { cfg, protocol } = this.ctx;
    const meta: RequestMeta = {
      episode: this.item.episode,
      trajectoryId: this.item.id,
      sample: this.item.sample,
      agent: agent.id,
      role: agent.role,
      delegation: agent.delegation,
      turn,
      protocol: protocol.name,
      results: results.map((r) => ({ ...r })),
    };
    if (agent.subtask !== undefined) meta.subtask = agent.subtask;
    const parallel = this.maxParallel(agent);
    if (parallel > 1) meta.maxParallel = parallel;
    const req: PolicyRequest = {
      key: `${this.item.id}/${agent.id}`,
      role: agent.role,
      messages: this.b.context(agent),
      // An agent that may delegate side by side keeps writing past its first call (to EOS or an answer).
      stop: [...(parallel > 1 ? protocol.parallelStop : protocol.stop)],
      maxNewTokens: cfg.maxNewTokens,
      meta,
    };
    if (this.item.stream !== undefined) req.seed = streamSeed(this.item.stream, agent, turn);
    if (forcing) {
      req.forcedTokens = [...forcing.message.tokenIds];
      req.maxNewTokens = Math.max(cfg.maxNewTokens, req.forcedTokens.length);
    }
    const r = await this.ctx.gen(req, agent.id);
    return {
      text: r.text,
      tokenIds: r.tokenIds,
      logprobs: r.logprobs,
      finishReason: r.finishReason,
      promptTokens: r.promptTokens,
    };
  }

  /** `delegate(subtask)`: a worker sub-episode (or a fixed report in replays); its answer is the report. */
  private async delegate(subtask: string): Promise<ExecOutcome> {
    const { cfg } = this.ctx;
    if (this.delegations >= cfg.maxDelegations)
      return {
        ok: false,
        output: errorText(`delegation limit (${cfg.maxDelegations}) reached`),
        stop: 'max_delegations',
      };
    const k = this.delegations++;
    const p = this.plan.delegation(k, subtask);
    if (p.kind === 'fixed') {
      const out: ExecOutcome = { ok: true, output: p.report, masked: p.masked };
      if (p.copy) out.workerAgent = this.b.copyAgent(p.copy.agent, p.copy.messages).id;
      return out;
    }
    const asked = p.subtask ?? subtask;
    const worker = this.b.addAgent('worker', k, asked);
    this.b.addPrompt(worker, 'system', this.ctx.prompts.worker);
    this.b.addPrompt(worker, 'user', asked);
    const forcing = p.workerTurn ?? (() => undefined);
    await this.agentLoop(worker, forcing, (name, args) => this.useTool(name, args));
    return { ok: true, output: worker.answer ?? cfg.workerFailureText, workerAgent: worker.id };
  }

  private async useTool(name: string, args: string): Promise<ExecOutcome> {
    if (name === 'delegate') return { ok: false, output: errorText('delegate is not a worker tool') };
    const tool = this.ctx.tools()[name];
    if (!tool) return { ok: false, output: errorText(`${name} is not a tool of this run`) };
    try {
      return await tool(args);
    } catch (err) {
      // Tools promise never to throw; a bug in one must still not end the rollout.
      return {
        ok: false,
        output: errorText(`${name} failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`),
      };
    }
  }
}
