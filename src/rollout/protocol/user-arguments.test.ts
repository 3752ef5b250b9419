import { describe, expect, it } from 'vitest';
import { argumentsCheck, asObjectSchema, type ObjectSchema } from '../../tools/user/schema.ts';
import { catalog } from './tool-catalog.ts';
import { userArguments } from './user-arguments.ts';

const spec = (name: string, parameters: unknown) => {
  const schema = (asObjectSchema(parameters) as { schema: ObjectSchema }).schema;
  return { name, description: '', schema, check: argumentsCheck(schema) };
};
const c = catalog(
  [
    spec('one', { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }),
    spec('two', { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a'] }),
  ],
  ['one', 'two'],
);

describe('userArguments', () => {
  it('the text a tool gets: the string trimmed, or the object as JSON', () => {
    expect(userArguments(c, 'one', { q: '  Oslo ' })).toEqual({ args: 'Oslo' });
    expect(userArguments(c, 'two', { b: 2, a: 1 })).toEqual({ args: '{"b":2,"a":1}' });
  });
  it('a reason for what does not fit', () => {
    expect(userArguments(c, 'one', { q: ' ' })).toEqual({ error: 'one: argument "q" is empty' });
    expect(userArguments(c, 'one', 'Oslo')).toEqual({ error: 'one: arguments must be a JSON object' });
    expect(userArguments(c, 'two', { b: 1 })).toEqual({ error: 'two: missing argument "a"' });
  });
});
