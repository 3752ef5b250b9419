import { describe, expect, it } from 'vitest';
import { argumentsCheck, asObjectSchema, singleStringParam, type ObjectSchema } from './schema.ts';

const schemaOf = (s: unknown): ObjectSchema => (asObjectSchema(s) as { schema: ObjectSchema }).schema;

describe('asObjectSchema', () => {
  it('accepts an object schema, without its $schema', () => {
    expect(
      asObjectSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: {} }),
    ).toEqual({ schema: { type: 'object', properties: {} } });
  });
  it('says in one line why anything else is not one', () => {
    expect(asObjectSchema('x')).toEqual({ error: 'parameters must be a JSON Schema object (or a zod object schema)' });
    expect(asObjectSchema({ type: 'string' })).toEqual({
      error: 'parameters must be an object schema (type: object), got type "string"',
    });
    expect(asObjectSchema({ type: 'object', properties: [] })).toEqual({
      error: 'parameters.properties must be an object',
    });
    expect(asObjectSchema({ type: 'object', properties: { a: { type: 'nonsense' } } })).toMatchObject({
      error: expect.stringMatching(/^parameters is not a valid JSON Schema: /),
    });
  });
});

describe('singleStringParam', () => {
  it('is the one required string property, else null', () => {
    const one = { type: 'object', properties: { q: { type: 'string', description: 'Q.' } }, required: ['q'] };
    expect(singleStringParam(schemaOf(one))).toEqual({ name: 'q', description: 'Q.' });
    expect(singleStringParam(schemaOf({ ...one, required: [] }))).toBeNull();
    expect(singleStringParam(schemaOf({ ...one, properties: { q: { type: 'number' } } }))).toBeNull();
    expect(
      singleStringParam(schemaOf({ type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } })),
    ).toBeNull();
  });
});

describe('argumentsCheck', () => {
  it('null for fitting arguments, else the first problem in words', () => {
    const check = argumentsCheck(
      schemaOf({
        type: 'object',
        properties: { city: { type: 'string' }, at: { type: 'object', properties: { year: { type: 'integer' } } } },
        required: ['city'],
        additionalProperties: false,
      }),
    );
    expect(check({ city: 'Paris', at: { year: 1990 } })).toBeNull();
    expect(check({})).toBe('missing argument "city"');
    expect(check({ city: 'P', x: 1 })).toBe('unknown argument "x"');
    expect(check({ city: 'P', at: { year: 1.5 } })).toBe('argument at.year must be integer');
  });
});
