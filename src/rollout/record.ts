/**
 * Building a Trajectory message by message, and reading back the exact context
 * an agent saw. The engine builds every policy request from the record itself through
 * `agentContext`, so the trainer re-rendering a message's context gets the same messages by
 * construction.
 */
import type { AgentRecord, ChatMessage, ChatRole, Message, Role, ToolCall, Trajectory } from './types.ts';

/**
 * The chat context the policy saw when message `messageIndex` (an assistant message of `agent`) was
 * generated: every earlier message of that agent (system prompt, task, its turns, its tool results).
 */
export function agentContext(traj: Trajectory, agent: number, messageIndex: number): ChatMessage[] {
  const target = traj.messages[messageIndex];
  if (!target) throw new Error(`agentContext: trajectory ${traj.id} has no message ${messageIndex}`);
  if (target.agent !== agent)
    throw new Error(
      `agentContext: message ${messageIndex} of ${traj.id} belongs to agent ${target.agent}, not ${agent}`,
    );
  const out: ChatMessage[] = [];
  for (let i = 0; i < messageIndex; i++) {
    const m = traj.messages[i] as Message;
    if (m.agent === agent) out.push({ role: m.chatRole, content: m.text });
  }
  return out;
}

/** Appends messages and agents with consistent indices. */
export class TrajectoryBuilder {
  readonly traj: Trajectory;

  constructor(id: string, episodeId: string, sample: number) {
    this.traj = { id, episodeId, sample, messages: [], agents: [], finalAnswer: null };
  }

  addAgent(role: Role, delegation: number | null, subtask?: string): AgentRecord {
    const agent: AgentRecord = { id: this.traj.agents.length, role, delegation, answer: null, endReason: 'error' };
    if (subtask !== undefined) agent.subtask = subtask;
    this.traj.agents.push(agent);
    return agent;
  }

  /** A prompt-side message (system, task, tool result): nothing generated. */
  addPrompt(agent: AgentRecord, chatRole: ChatRole, text: string): Message {
    return this.push({
      index: 0,
      agent: agent.id,
      role: agent.role,
      chatRole,
      text,
      tokenIds: [],
      logprobs: [],
      toolCalls: [],
    });
  }

  addAssistant(agent: AgentRecord, gen: Pick<Message, 'text' | 'tokenIds' | 'logprobs' | 'finishReason'>): Message {
    const m: Message = {
      index: 0,
      agent: agent.id,
      role: agent.role,
      chatRole: 'assistant',
      text: gen.text,
      tokenIds: [...gen.tokenIds],
      logprobs: [...gen.logprobs],
      toolCalls: [],
    };
    if (gen.finishReason !== undefined) m.finishReason = gen.finishReason;
    return this.push(m);
  }

  /**
   * Copies a recorded worker (agent record + its messages, in order) into this trajectory under a new
   * agent id; used by replays that keep a worker's report fixed.
   */
  copyAgent(source: AgentRecord, messages: readonly Message[]): AgentRecord {
    const agent: AgentRecord = { ...source, id: this.traj.agents.length };
    this.traj.agents.push(agent);
    for (const m of messages)
      this.push({
        ...m,
        agent: agent.id,
        tokenIds: [...m.tokenIds],
        logprobs: [...m.logprobs],
        toolCalls: m.toolCalls.map(copyCall),
      });
    return agent;
  }

  context(agent: AgentRecord): ChatMessage[] {
    return this.traj.messages.filter((m) => m.agent === agent.id).map((m) => ({ role: m.chatRole, content: m.text }));
  }

  private push(m: Message): Message {
    m.index = this.traj.messages.length;
    this.traj.messages.push(m);
    return m;
  }
}

function copyCall(c: ToolCall): ToolCall {
  const out = { ...c };
  if (c.retrievedIdx) out.retrievedIdx = [...c.retrievedIdx];
  if (c.retrievedIds) out.retrievedIds = [...c.retrievedIds];
  return out;
}

/** Assistant messages of one agent, in order (its turns). */
export function agentTurns(traj: Trajectory, agent: number): Message[] {
  return traj.messages.filter((m) => m.agent === agent && m.chatRole === 'assistant');
}

/** The worker agent spawned by delegation k, if one ran. */
export function delegationWorker(traj: Trajectory, k: number): AgentRecord | undefined {
  return traj.agents.find((a) => a.role === 'worker' && a.delegation === k);
}
