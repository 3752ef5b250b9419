import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { MAX_TOOL_RESULT_CHARS } from '../result-cap.ts';
import { startModuleTool, type StartedTools } from './module-tool.ts';

/** Module tools (defineTool) in their own process: answers, schema checks, and every way a call can go wrong. */
const entry = (module: string, more: Record<string, unknown> = {}) => {
  const tools = configSchema.parse({ rollout: { tools: [{ module, ...more }] } }).rollout.tools ?? [];
  return tools[0] as Extract<(typeof tools)[number], { module: string }>;
};
const BAD = 'test/fixtures/user-tools/bad-tools.ts';

const open: StartedTools[] = [];
async function start(module: string, more: Record<string, unknown> = {}): Promise<StartedTools> {
  const s = await startModuleTool(entry(module, more));
  open.push(s);
  return s;
}
afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
});

describe('a defineTool module', () => {
  it('describes itself from its zod schema and answers a call', async () => {
    const { tools } = await start('test/fixtures/user-tools/lookup.ts');
    const t = tools[0]!;
    expect(t).toMatchObject({ name: 'lookup', description: 'Population of a city in a year.' });
    expect(t.schema).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string', description: 'City name.' }, year: { type: 'integer' } },
      required: ['city', 'year'],
    });
    expect(t.check({ city: 'Paris', year: 1990 })).toBeNull();
    expect(t.check({ city: 'Paris' })).toBe('missing argument "year"');
    expect(await t.run('{"city":"Paris","year":1990}')).toEqual({
      ok: true,
      output: 'Paris had 2152423 inhabitants in 1990.',
    });
    expect(await t.run('{"city":"Rome","year":1990}')).toEqual({ ok: true, output: 'No record for Rome in 1990.' });
  });

  it('bounds an endless loop by its timeout, then answers the next call from a fresh process', async () => {
    const { tools } = await start(BAD, { export: 'spin', timeoutMs: 500 });
    const t0 = performance.now();
    expect(await tools[0]!.run('{}')).toEqual({ ok: false, output: 'spin error: no answer within 500 ms (timeoutMs)' });
    expect(performance.now() - t0).toBeLessThan(5_000);
    // The process was killed and a new one started: it loops again, and again is cut off.
    expect((await tools[0]!.run('{"n": 1}')).ok).toBe(false);
  });

  it('a tool that ends its process, throws, returns no string or too much text gives an error or capped result', async () => {
    const quit = (await start(BAD, { export: 'quit' })).tools[0]!;
    expect(await quit.run('{}')).toEqual({ ok: false, output: 'quit error: sandbox exited with code 7' });
    const thrower = (await start(BAD, { export: 'thrower' })).tools[0]!;
    expect(await thrower.run('{}')).toEqual({ ok: false, output: 'thrower error: no data' });
    const numeric = (await start(BAD, { export: 'numeric' })).tools[0]!;
    expect(await numeric.run('{}')).toEqual({ ok: false, output: 'numeric error: run returned number, no string' });
    const huge = (await start(BAD, { export: 'huge' })).tools[0]!;
    const out = await huge.run('{}');
    expect(out.ok).toBe(true);
    // Cut in the tool's process: only one character past the cap crosses, so result-cap.ts adds its note.
    expect(out.output.length).toBe(MAX_TOOL_RESULT_CHARS + 1);
  });
});

describe('bad tool modules are one line before anything runs', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'test/fixtures/user-tools/no-tool.ts',
      {},
      'rollout.tools: module test/fixtures/user-tools/no-tool.ts exports no tool (export default ' +
        'defineTool({ name, description, parameters, run }))',
    ],
    [
      BAD,
      {},
      `rollout.tools: module ${BAD} exports several tools (arrayParams, huge, numeric, quit, spin, thrower): ` +
        'name one with export',
    ],
    [BAD, { export: 'missing' }, `rollout.tools: module ${BAD} (export missing) has no export 'missing'`],
    [
      BAD,
      { export: 'notATool' },
      `rollout.tools: module ${BAD} (export notATool) export 'notATool' is not a tool (make it with defineTool({ ` +
        'name, description, ... }))',
    ],
    [
      BAD,
      { export: 'arrayParams' },
      `rollout.tools: module ${BAD} (export arrayParams): tool 'arrayParams': parameters must be an object schema ` +
        '(type: object), got type "array"',
    ],
  ];
  for (const [module, more, message] of cases)
    it(`${String(more['export'] ?? module)}`, async () => {
      const err = await startModuleTool(entry(module, more)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toBe(message);
    });

  it('a module that never finishes loading, within startTimeoutMs (its process is stopped)', async () => {
    const t0 = performance.now();
    await expect(startModuleTool(entry('test/fixtures/user-tools/hang.ts', { startTimeoutMs: 3000 }))).rejects.toThrow(
      'rollout.tools: module test/fixtures/user-tools/hang.ts did not load within 3000 ms (startTimeoutMs)',
    );
    expect(performance.now() - t0).toBeLessThan(8000);
  });

  it('a missing file', async () => {
    await expect(startModuleTool(entry('test/fixtures/user-tools/nope.ts'))).rejects.toThrow(
      /^rollout\.tools: module test\/fixtures\/user-tools\/nope\.ts: no such file /,
    );
  });
});
