import { describe, expect, it } from 'vitest';
import { UserError } from '../../errors.ts';
import { argumentsOf, describedTool, firstLine, within } from './user-tool.ts';

describe('describedTool', () => {
  it('checks the name and the schema, and flattens the description', () => {
    const t = describedTool(
      { name: 'get_city', description: 'Finds\n  a city.', parameters: { type: 'object', properties: {} } },
      'module m.ts',
    );
    expect(t).toMatchObject({ name: 'get_city', description: 'Finds a city.', schema: { type: 'object' } });
    expect(t.check({})).toBeNull();
  });
  it('refuses a name that is not a plain word, or a schema that is not an object', () => {
    expect(() => describedTool({ name: 'a b', description: '', parameters: { type: 'object' } }, 'm')).toThrow(
      UserError,
    );
    expect(() => describedTool({ name: 'ok', description: '', parameters: { type: 'array' } }, 'mcp server s')).toThrow(
      'rollout.tools: mcp server s: tool \'ok\': parameters must be an object schema (type: object), got type "array"',
    );
  });
});

describe('helpers', () => {
  it('argumentsOf: the string under its parameter, or a JSON object', () => {
    expect(argumentsOf('q', 'text')).toEqual({ q: 'text' });
    expect(argumentsOf(null, '{"a":1}')).toEqual({ a: 1 });
    expect(argumentsOf(null, '[1]')).toBeNull();
    expect(argumentsOf(null, 'nope')).toBeNull();
  });
  it('within: the value in time, the timeout error past it', async () => {
    expect(await within(Promise.resolve(3), 100, () => new Error('late'))).toBe(3);
    await expect(within(new Promise(() => undefined), 20, () => new Error('late'))).rejects.toThrow('late');
  });
  it('firstLine: one line, bounded', () => {
    expect(firstLine(new Error('a\n  b'))).toBe('a b');
    expect(firstLine('x'.repeat(500))).toHaveLength(300);
  });
});
