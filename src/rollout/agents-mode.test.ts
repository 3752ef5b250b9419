import { afterAll, describe, expect, it } from 'vitest';
import { closeCodeSandbox } from '../tools/code.ts';
import { requestMeta, runTrajectories, type AgentsMode } from './engine.ts';
import { PROTOCOLS } from './protocol/index.ts';
import { ScriptedPolicy, type ScriptFn } from './scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';

/**
 * The engine's agent systems (`sharp eval --agents`): multi (planner + workers, the
 * engine tests), single (the root agent alone with the worker tools on the whole question) and
 * direct (the root agent with no tools).
 */
afterAll(async () => {
  await closeCodeSandbox();
});

/** Root agent: search the founder, then answer 1950 (a lone agent doing both hops itself). */
const lone: ScriptFn = (req) => {
  const m = requestMeta(req);
  const p = PROTOCOLS[m.protocol];
  if (m.turn === 0) return p.formatCall('search', 'Alin Marek born');
  return p.formatAnswer('1950');
};

async function runMode(agents: AgentsMode, protocol: 'tags' | 'json' = 'tags') {
  const policy = new ScriptedPolicy(lone);
  const cfg = rolloutConfig({ protocol });
  const { trajectories } = await runTrajectories(policy, [{ id: 't0', episode: handEpisode(), sample: 0 }], {
    cfg,
    agents,
  });
  return { traj: trajectories[0], cfg };
}

describe('agent systems', () => {
  for (const protocol of ['tags', 'json'] as const) {
    it(`single (${protocol}): one agent searches the paragraphs itself and answers`, async () => {
      const { traj, cfg } = await runMode('single', protocol);
      expect(traj.agents).toHaveLength(1);
      expect(traj.agents[0]).toMatchObject({ role: 'planner', delegation: null, answer: '1950', endReason: 'answer' });
      const system = traj.messages[0].text;
      expect(system.startsWith(cfg.singlePrompt)).toBe(true);
      expect(system).toContain('search');
      expect(system).not.toContain('delegate');
      const call = traj.messages.flatMap((m) => m.toolCalls)[0];
      // BM25 over the hand episode: "Alin Marek born" ranks paragraph 1 first.
      expect(call).toMatchObject({ name: 'search', valid: true });
      expect(call.retrievedIdx?.[0]).toBe(1);
      expect(traj.finalAnswer).toBe('1950');
    });
  }

  it('direct: the agent has no tools; a call is recorded as invalid and answered with the error', async () => {
    const { traj, cfg } = await runMode('direct');
    const system = traj.messages[0].text;
    expect(system.startsWith(cfg.directPrompt)).toBe(true);
    expect(system).not.toContain('<search>');
    const call = traj.messages.flatMap((m) => m.toolCalls)[0];
    expect(call).toMatchObject({
      name: 'search',
      valid: false,
      error: "tool 'search' is not available to the planner (its tools: answer)",
    });
    expect(call.retrievedIdx).toBeUndefined();
    expect(traj.finalAnswer).toBe('1950');
  });

  it('multi stays the default: the root cannot search', async () => {
    const policy = new ScriptedPolicy(lone);
    const { trajectories } = await runTrajectories(policy, [{ id: 't0', episode: handEpisode(), sample: 0 }], {
      cfg: rolloutConfig(),
    });
    const call = trajectories[0].messages.flatMap((m) => m.toolCalls)[0];
    expect(call).toMatchObject({
      name: 'search',
      valid: false,
      error: "tool 'search' is not available to the planner (its tools: delegate, answer)",
    });
  });
});
