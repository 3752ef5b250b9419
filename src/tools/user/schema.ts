import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';

/**
 * The arguments schema of a user tool: a JSON Schema of type object (from zod's toJSONSchema, an MCP
 * server's inputSchema, or written by hand). Calls are checked against it before the tool runs, so a
 * tool only ever sees arguments of the shape it declared, and a model's malformed call is an invalid
 * tool call with a one-line reason, as for the built-ins.
 */
export type ObjectSchema = Record<string, unknown> & { type: 'object' };

/** One validator instance: compiled schemas are cached by it, and each tool compiles once at start. */
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `schema` as an object schema, or a one-line reason it is not one. `$schema` is dropped: drafts
 * 07 and 2020-12 read alike for argument objects, and the prompt needs no meta-schema URL.
 */
export function asObjectSchema(schema: unknown): { schema: ObjectSchema } | { error: string } {
  if (!isRecord(schema)) return { error: 'parameters must be a JSON Schema object (or a zod object schema)' };
  if (schema['type'] !== 'object')
    return { error: `parameters must be an object schema (type: object), got type ${JSON.stringify(schema['type'])}` };
  const props = schema['properties'];
  if (props !== undefined && !isRecord(props)) return { error: 'parameters.properties must be an object' };
  const copy: Record<string, unknown> = { ...schema };
  delete copy['$schema'];
  try {
    ajv.compile(copy);
  } catch (err) {
    return { error: `parameters is not a valid JSON Schema: ${firstLine(err)}` };
  }
  return { schema: copy as ObjectSchema };
}

/**
 * The one string argument of a schema that has exactly one property, a required string: such a tool
 * is called as the built-ins are, `<name>text</name>` in the tags protocol.
 */
export function singleStringParam(schema: ObjectSchema): { name: string; description: string } | null {
  const props = isRecord(schema['properties']) ? schema['properties'] : {};
  const names = Object.keys(props);
  const required = Array.isArray(schema['required']) ? (schema['required'] as unknown[]) : [];
  const only = names[0];
  if (names.length !== 1 || only === undefined || !required.includes(only)) return null;
  const prop = props[only];
  if (!isRecord(prop) || prop['type'] !== 'string') return null;
  return { name: only, description: typeof prop['description'] === 'string' ? prop['description'] : '' };
}

/** A check of a call's arguments: null when they fit, else a one-line reason naming the argument. */
export type ArgumentsCheck = (args: Record<string, unknown>) => string | null;

export function argumentsCheck(schema: ObjectSchema): ArgumentsCheck {
  const validate = ajv.compile(schema);
  return (args) => (validate(args) ? null : describeError(validate.errors?.[0]));
}

function describeError(e: ErrorObject | undefined): string {
  if (!e) return 'arguments do not match the schema';
  const at = e.instancePath === '' ? 'arguments' : `argument ${e.instancePath.slice(1).replace(/\//g, '.')}`;
  if (e.keyword === 'required') return `missing argument "${String(e.params['missingProperty'])}"`;
  if (e.keyword === 'additionalProperties') return `unknown argument "${String(e.params['additionalProperty'])}"`;
  return `${at} ${e.message ?? 'does not match the schema'}`.replace(/\s+/g, ' ');
}

function firstLine(err: unknown): string {
  return ((err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '').slice(0, 200);
}
