import { describe, expect, it } from 'vitest';
import { agentContext, agentTurns, delegationWorker, TrajectoryBuilder } from './record.ts';
import type { AgentRecord } from './types.ts';

function build() {
  const b = new TrajectoryBuilder('t/0', 'e', 0);
  const p = b.addAgent('planner', null);
  b.addPrompt(p, 'system', 'P');
  b.addPrompt(p, 'user', 'Q');
  b.addAssistant(p, { text: '<delegate>x</delegate>', tokenIds: [1, 2], logprobs: [-0.5, -1], finishReason: 'stop' });
  const w = b.addAgent('worker', 0, 'x');
  b.addPrompt(w, 'system', 'W');
  b.addPrompt(w, 'user', 'x');
  b.addAssistant(w, { text: '<answer>y</answer>', tokenIds: [3], logprobs: [-2], finishReason: 'stop' });
  b.addPrompt(p, 'tool', '<result>y</result>');
  b.addAssistant(p, { text: '<answer>y</answer>', tokenIds: [3], logprobs: [-0.1], finishReason: 'eos' });
  return b;
}

describe('trajectory record', () => {
  it('gives each assistant message the context of its own agent only', () => {
    const t = build().traj;
    expect(t.messages.map((m) => m.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(agentContext(t, 1, 5)).toEqual([
      { role: 'system', content: 'W' },
      { role: 'user', content: 'x' },
    ]);
    expect(agentContext(t, 0, 7)).toEqual([
      { role: 'system', content: 'P' },
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: '<delegate>x</delegate>' },
      { role: 'tool', content: '<result>y</result>' },
    ]);
    expect(() => agentContext(t, 0, 5)).toThrow('agentContext: message 5 of t/0 belongs to agent 1, not 0');
    expect(() => agentContext(t, 0, 99)).toThrow('agentContext: trajectory t/0 has no message 99');
    expect(agentTurns(t, 0).map((m) => m.index)).toEqual([2, 7]);
    expect(delegationWorker(t, 0)?.id).toBe(1);
    expect(delegationWorker(t, 1)).toBeUndefined();
  });

  it('copies a recorded worker under a new id with renumbered messages and no shared arrays', () => {
    const src = build().traj;
    const b = new TrajectoryBuilder('r', 'e', 0);
    b.addAgent('planner', null);
    const copy = b.copyAgent(
      src.agents[1] as AgentRecord,
      src.messages.filter((m) => m.agent === 1),
    );
    expect(copy).toEqual({ ...src.agents[1], id: 1 });
    expect(b.traj.messages.map((m) => [m.index, m.agent, m.text])).toEqual([
      [0, 1, 'W'],
      [1, 1, 'x'],
      [2, 1, '<answer>y</answer>'],
    ]);
    b.traj.messages[2]?.tokenIds.push(9);
    expect(src.messages[5]?.tokenIds).toEqual([3]);
  });
});
