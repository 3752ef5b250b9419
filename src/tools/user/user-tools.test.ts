import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { closeUserTools, startedUserTools, startUserTools } from './user-tools.ts';

/** A rollout.tools list started once per process, its names checked across every entry. */
afterAll(async () => {
  await closeUserTools();
});

const tools = (list: unknown[]) => configSchema.parse({ rollout: { tools: list } }).rollout.tools;
const LOOKUP = { module: 'test/fixtures/user-tools/lookup.ts' };

describe('startUserTools', () => {
  it('no list: the built-ins, nothing started', async () => {
    expect(configSchema.parse({}).rollout.tools).toBeUndefined();
    expect(await startUserTools(undefined)).toEqual({ tools: [], workerTools: ['search', 'calculate', 'code'] });
    expect(startedUserTools(undefined).workerTools).toEqual(['search', 'calculate', 'code']);
  });

  it('a list: built-ins and user tools in list order, started once for every caller', async () => {
    const list = tools(['code', LOOKUP, 'search']);
    const [a, b] = await Promise.all([startUserTools(list), startUserTools(list)]);
    expect(a).toBe(b);
    expect(a.workerTools).toEqual(['code', 'lookup', 'search']);
    expect(a.tools.map((t) => t.name)).toEqual(['lookup']);
    // The same list, parsed again (a job's config on a worker): the same started set.
    expect(startedUserTools(tools(['code', LOOKUP, 'search']))).toBe(a);
    expect(() => startedUserTools(tools(['calculate']))).toThrow(/before startUserTools finished/);
  });

  const bad: [string, unknown[], string][] = [
    ['a built-in listed twice', ['search', 'search'], "rollout.tools: two tools are named 'search'"],
    [
      'two modules with one tool name',
      [LOOKUP, { module: 'test/fixtures/user-tools/lookup-copy.ts' }],
      "rollout.tools: two tools are named 'lookup' (module test/fixtures/user-tools/lookup.ts and module " +
        'test/fixtures/user-tools/lookup-copy.ts)',
    ],
    [
      "a tool that takes a built-in's name",
      [{ module: 'test/fixtures/user-tools/search-clash.ts' }],
      "rollout.tools: module test/fixtures/user-tools/search-clash.ts: tool 'search' takes the name of a built-in " +
        '(search, calculate, code, delegate, answer)',
    ],
  ];
  for (const [what, list, message] of bad)
    it(`${what} is one line`, async () => {
      const err = await startUserTools(tools(list)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message.startsWith(message)).toBe(true);
      // Nothing of a failed list stays started: the next attempt starts again (and fails again).
      expect(() => startedUserTools(tools(list))).toThrow(/before startUserTools finished/);
    });
});

describe('the rollout.tools schema', () => {
  it('refuses an mcp entry with both or neither of command and url, and unknown keys', () => {
    expect(() => tools([{ mcp: 'x' }])).toThrow(/command \(stdio\) or url/);
    expect(() => tools([{ mcp: 'x', command: 'a', url: 'http://127.0.0.1/' }])).toThrow(/exactly one/);
    expect(() => tools(['browse'])).toThrow();
    expect(() => tools([{ module: 'a.ts', exprt: 'x' }])).toThrow();
  });
  it('keeps ${ENV} references as written (what config.yaml records)', () => {
    expect(tools([{ mcp: 'x', url: 'http://127.0.0.1/', headers: { A: 'Bearer ${TOKEN}' } }])).toEqual([
      {
        mcp: 'x',
        url: 'http://127.0.0.1/',
        headers: { A: 'Bearer ${TOKEN}' },
        args: [],
        timeoutMs: 10_000,
        startTimeoutMs: 30_000,
      },
    ]);
  });
});
