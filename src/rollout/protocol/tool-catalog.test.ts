import { describe, expect, it } from 'vitest';
import { argumentsCheck, asObjectSchema, type ObjectSchema } from '../../tools/user/schema.ts';
import { getProtocol } from './index.ts';
import { catalog, catalogOf, catalogSpecs, configCatalog, DEFAULT_CATALOG, type UserToolSpec } from './tool-catalog.ts';

/** User tools in both protocols: rendered from their schemas, their calls checked against them. */
function userTool(name: string, description: string, parameters: unknown): UserToolSpec {
  const s = asObjectSchema(parameters) as { schema: ObjectSchema };
  return { name, description, schema: s.schema, check: argumentsCheck(s.schema) };
}

const lookup = userTool('lookup', 'Population of a city in a year.', {
  type: 'object',
  properties: { city: { type: 'string', description: 'City name.' }, year: { type: 'integer' } },
  required: ['city', 'year'],
  additionalProperties: false,
});
const weather = userTool('weather', 'The weather in a city.', {
  type: 'object',
  properties: { city: { type: 'string', description: 'City.', minLength: 2 } },
  required: ['city'],
});
const c = catalog([lookup, weather], ['search', 'lookup', 'weather']);
const tags = getProtocol('tags', c);
const json = getProtocol('json', c);

describe('tags protocol with user tools', () => {
  it('renders a one-string tool like the built-ins and a two-field tool as a JSON object', () => {
    expect(tags.systemPrompt('W.', catalogSpecs(c, c.workerTools))).toBe(
      'W.\n\nTools (one per message):\n' +
        '<search>query</search>: Search the paragraphs. Returns the best matching paragraphs as [idx] Title: text.\n' +
        '<lookup>{"city": string, "year": integer}</lookup>: Population of a city in a year. (city: City name)\n' +
        '<weather>city</weather>: The weather in a city.\n' +
        '<answer>answer</answer>: Give your final answer and stop.\n' +
        'Tool output comes back as <result>...</result>.',
    );
    expect(tags.stop).toEqual([
      '</delegate>',
      '</search>',
      '</calculate>',
      '</code>',
      '</answer>',
      '</lookup>',
      '</weather>',
    ]);
  });

  it('reads calls: the string, or the JSON object as the tool gets it', () => {
    expect(tags.parse('<weather> Oslo </weather>')).toEqual({
      kind: 'call',
      name: 'weather',
      args: 'Oslo',
      rawArgs: ' Oslo ',
    });
    expect(tags.parse('Let me look. <lookup>{"city": "Paris", "year": 1990}</lookup>')).toEqual({
      kind: 'call',
      name: 'lookup',
      args: '{"city":"Paris","year":1990}',
      rawArgs: '{"city": "Paris", "year": 1990}',
    });
    expect(tags.parse(tags.formatCall('lookup', '{"city":"Oslo","year":2000}'))).toMatchObject({
      kind: 'call',
      args: '{"city":"Oslo","year":2000}',
    });
  });

  it('an invalid call has a one-line reason', () => {
    const cases: [string, string][] = [
      [
        '<lookup>Paris 1990</lookup>',
        '<lookup> takes a JSON object of its arguments, e.g. <lookup>{"city": string, "year": integer}</lookup>',
      ],
      ['<lookup>{"city": "Paris"}</lookup>', 'lookup: missing argument "year"'],
      ['<lookup>{"city": "Paris", "year": "x"}</lookup>', 'lookup: argument year must be integer'],
      ['<lookup>{"city": "Paris", "year": 1, "z": 0}</lookup>', 'lookup: unknown argument "z"'],
      ['<lookup>[1]</lookup>', 'lookup: arguments must be a JSON object'],
      ['<weather>O</weather>', 'weather: argument city must NOT have fewer than 2 characters'],
      ['<weather> </weather>', 'empty <weather></weather>: write the argument between the tags'],
      ['<browse>x</browse>', 'unknown tool <browse>'],
    ];
    for (const [text, error] of cases) expect(tags.parse(text), text).toMatchObject({ kind: 'invalid', error });
  });
});

describe('json protocol with user tools', () => {
  it('renders the schema as given', () => {
    const s = json.systemPrompt('W.', catalogSpecs(c, ['lookup']));
    const line = s.split('\n').find((l) => l.includes('"lookup"'));
    expect(JSON.parse(line ?? '')).toEqual({
      type: 'function',
      function: { name: 'lookup', description: 'Population of a city in a year.', parameters: lookup.schema },
    });
  });

  it('reads and checks the arguments object', () => {
    expect(
      json.parse('<tool_call>{"name": "lookup", "arguments": {"city": "Paris", "year": 1990}}</tool_call>'),
    ).toEqual({
      kind: 'call',
      name: 'lookup',
      args: '{"city":"Paris","year":1990}',
      rawArgs: '{"city":"Paris","year":1990}',
    });
    expect(json.parse('<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>')).toMatchObject({
      kind: 'call',
      args: 'Oslo',
    });
    expect(json.parse(json.formatCall('lookup', '{"city":"Oslo","year":2000}'))).toMatchObject({
      kind: 'call',
      name: 'lookup',
      args: '{"city":"Oslo","year":2000}',
    });
    expect(json.parse('<tool_call>{"name": "lookup", "arguments": {"city": 3, "year": 1}}</tool_call>')).toMatchObject({
      kind: 'invalid',
      error: 'lookup: argument city must be string',
    });
    expect(json.parse('<lookup>{}</lookup>')).toMatchObject({
      kind: 'invalid',
      error: expect.stringContaining('write calls as <tool_call>'),
    });
  });
});

describe('catalog', () => {
  it('a config without user tools has the default catalog (the built-ins as trained)', () => {
    expect(configCatalog({})).toBe(DEFAULT_CATALOG);
    expect(catalogOf({ tools: [], workerTools: ['search', 'calculate', 'code'] })).toBe(DEFAULT_CATALOG);
    expect(catalogOf({ tools: [], workerTools: ['search'] }).workerTools).toEqual(['search']);
  });
  it('refuses a worker tool it does not know', () => {
    expect(() => catalog([], ['search', 'browse'])).toThrow("tool catalog: no tool named 'browse'");
  });
});
