import { afterAll, describe, expect, it } from 'vitest';
import { closeUserTools } from '../tools/user/user-tools.ts';
import { requestMeta, runTrajectories } from './engine.ts';
import { ScriptedPolicy, type ScriptFn } from './scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';

/**
 * User tools in the real engine, driven by a scripted policy: a defineTool module with two arguments
 * (test/fixtures/user-tools/lookup.ts) and misbehaving MCP servers (mcp-server.ts). Their results reach
 * the worker, its report reaches the planner, and the trajectory records their calls as it records
 * the built-ins'.
 */
afterAll(async () => {
  await closeUserTools();
});

const LOOKUP = { module: 'test/fixtures/user-tools/lookup.ts', timeoutMs: 20_000 };
const SERVER = ['--import', 'tsx', 'test/fixtures/user-tools/mcp-server.ts', 'stdio'];

const call = (protocol: 'tags' | 'json', name: string, args: Record<string, unknown>): string =>
  protocol === 'tags'
    ? `<${name}>${JSON.stringify(args)}</${name}>`
    : `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

/**
 * Planner: delegate once, answer the report. Worker: call `tool` with `args`, then answer with the
 * result it read (or 'failed: <error>' after an invalid call).
 */
function script(protocol: 'tags' | 'json', tool: string, args: Record<string, unknown>): ScriptFn {
  return (req) => {
    const m = requestMeta(req);
    if (m.role === 'planner') {
      if (m.turn === 0)
        return protocol === 'tags'
          ? '<delegate>Population of Paris in 1990?</delegate>'
          : '<tool_call>{"name": "delegate", "arguments": {"subtask": "Population of Paris in 1990?"}}</tool_call>';
      return `<answer>${m.results[0]?.output ?? 'none'}</answer>`;
    }
    if (m.turn === 0) return call(protocol, tool, args);
    const r = m.results[0];
    return `<answer>${r?.valid ? r.output : `failed: ${r?.output ?? ''}`}</answer>`;
  };
}

async function runOne(protocol: 'tags' | 'json', tools: unknown[], fn: ScriptFn) {
  const cfg = rolloutConfig({ protocol, tools });
  const { trajectories } = await runTrajectories(
    new ScriptedPolicy(fn),
    [{ id: 't0', episode: handEpisode(), sample: 0 }],
    { cfg },
  );
  return trajectories[0]!;
}

describe('a defineTool module with two arguments', () => {
  for (const protocol of ['tags', 'json'] as const) {
    it(`${protocol}: the worker calls it, its result is the worker's report and the planner's answer`, async () => {
      const t = await runOne(protocol, ['search', LOOKUP], script(protocol, 'lookup', { city: 'Paris', year: 1990 }));
      const worker = t.messages.filter((m) => m.agent === 1);
      // The worker's prompt lists the user tool from its schema beside search.
      expect(worker[0]!.text).toContain('lookup');
      expect(worker[0]!.text).toContain('search');
      const calls = t.messages.flatMap((m) => m.toolCalls);
      expect(calls.find((c) => c.name === 'lookup')).toMatchObject({
        valid: true,
        result: 'Paris had 2152423 inhabitants in 1990.',
      });
      expect(calls.find((c) => c.name === 'delegate')).toMatchObject({
        valid: true,
        result: 'Paris had 2152423 inhabitants in 1990.',
        workerAgent: 1,
      });
      expect(t.agents[1]).toMatchObject({ answer: 'Paris had 2152423 inhabitants in 1990.', endReason: 'answer' });
      expect(t.finalAnswer).toBe('Paris had 2152423 inhabitants in 1990.');
    });

    it(`${protocol}: arguments that break the schema are an invalid call with a one-line reason`, async () => {
      const t = await runOne(protocol, ['search', LOOKUP], script(protocol, 'lookup', { city: 'Paris', year: 'x' }));
      const bad = t.messages.flatMap((m) => m.toolCalls).find((c) => c.name === 'lookup');
      expect(bad).toMatchObject({ valid: false, error: 'lookup: argument year must be integer' });
      expect(t.finalAnswer).toBe('failed: Error: lookup: argument year must be integer');
    });
  }

  it("a built-in left out of the list is not the worker's: its call is refused", async () => {
    const t = await runOne('tags', [LOOKUP], (req) => {
      const m = requestMeta(req);
      if (m.role === 'planner') return m.turn === 0 ? '<delegate>x</delegate>' : '<answer>done</answer>';
      return m.turn === 0 ? '<search>Paris</search>' : '<answer>no</answer>';
    });
    expect(t.messages.flatMap((m) => m.toolCalls).find((c) => c.name === 'search')).toMatchObject({
      valid: false,
      error: "tool 'search' is not available to the worker (its tools: lookup, answer)",
    });
  });
});

describe('a job config', () => {
  it('a config that crossed the wire (a distributed job) starts the same tools in a fresh process state', async () => {
    await closeUserTools();
    const cfg = JSON.parse(
      JSON.stringify(rolloutConfig({ protocol: 'tags', tools: ['search', LOOKUP] })),
    ) as ReturnType<typeof rolloutConfig>;
    const { trajectories } = await runTrajectories(
      new ScriptedPolicy(script('tags', 'lookup', { city: 'Oslo', year: 1990 })),
      [{ id: 't0', episode: handEpisode(), sample: 0 }],
      { cfg },
    );
    expect(trajectories[0]!.finalAnswer).toBe('Oslo had 458364 inhabitants in 1990.');
  });
});

describe('misbehaving MCP servers: the call is invalid, the wait bounded, the rollout goes on', () => {
  const server = (tool: string) => ({
    mcp: `fx-${tool}`,
    command: process.execPath,
    args: SERVER,
    allow: [tool, 'weather'],
    timeoutMs: 1500,
  });
  const cases: [string, RegExp][] = [
    ['slow', /^slow error: no answer within 1500 ms \(timeoutMs\)$/],
    ['crash', /^crash error: .*Connection closed/],
    ['lie', /^lie error: .*Invalid tools\/call result/],
    ['wrong', /^wrong error: .*output schema/],
  ];
  for (const [tool, error] of cases) {
    it(`${tool}`, async () => {
      const t0 = performance.now();
      const t = await runOne('json', [server(tool)], script('json', tool, {}));
      const ms = performance.now() - t0;
      const c = t.messages.flatMap((m) => m.toolCalls).find((k) => k.name === tool);
      expect(c?.valid).toBe(false);
      expect(c?.error).toMatch(error);
      expect(c?.error).not.toContain('\n');
      // The worker read the error, answered, and the planner answered its report.
      expect(t.finalAnswer).toMatch(/^failed: /);
      expect(t.agents.every((a) => a.endReason === 'answer')).toBe(true);
      // Server start (a tsx process) plus at most the call's timeout and a second of slack.
      expect(ms).toBeLessThan(25_000);
    });
  }
});
